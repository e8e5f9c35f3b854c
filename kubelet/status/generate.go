package status

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/internal/qos"
	"github.com/podkit/podkit/sandbox"
)

// Probes is the prober's view of containers; kubelet/prober's Manager
// satisfies it. Both answers may be true only for a running container.
type Probes interface {
	// Started: running, and its startup probe (if any) has succeeded.
	Started(podUID types.UID, container string) bool
	// Ready: started, and its readiness probe (if any) has succeeded.
	Ready(podUID types.UID, container string) bool
}

// Waiting is a reason the kubelet decided for a container not to run yet,
// with its message (e.g. CrashLoopBackOff and CrashLoopBackOffMessage).
type Waiting struct {
	Reason, Message string
}

// Override is a verdict the kubelet reached about the whole pod: Failed
// for a pod rejected at admission ("OutOfcpu", "NodeAffinity"), evicted
// ("Evicted") or past activeDeadlineSeconds ("DeadlineExceeded"); Pending
// with a reason for a soft-rejected pod.
type Override struct {
	Phase           corev1.PodPhase
	Reason, Message string
}

// Input is everything Generate looks at.
type Input struct {
	// Pod is the pod as the kubelet last received it; Pod.Status is the
	// status the API server has.
	Pod *corev1.Pod
	// Old is the status the kubelet generated last (its status cache),
	// nil to use Pod.Status. It supplies restart counts, last states and
	// start time the runtime may no longer know about.
	Old *corev1.PodStatus
	// Sandbox is the pod's latest sandbox, nil when it has none.
	Sandbox *sandbox.Sandbox
	// Containers are the runtime's containers of the pod (every sandbox,
	// every attempt still known: the newest of a name is its state, the
	// one before its lastState).
	Containers []*sandbox.ContainerStatus
	// Probes answers readiness and started; nil means no probes: a
	// running container is started and ready.
	Probes Probes
	// Waiting are the kubelet's reasons for containers not running, by
	// container name. A reason applies only to a container the kubelet
	// would (re)start; its terminated state moves to lastState.
	Waiting map[string]Waiting
	// NodeIPs are the node's addresses (hostIP, hostIPs); the first one's
	// family is the preferred family of pod IPs. Host-network pods get
	// them as pod IPs.
	NodeIPs []netip.Addr
	// Terminal says the kubelet has finished with the pod (deleted, or
	// nothing will run again): stopped containers make it Succeeded or
	// Failed whatever the restart policy.
	Terminal bool
	// Override is the kubelet's own verdict on the pod, if any.
	Override *Override
}

// Generate computes the pod's status from in, as the kubelet's
// generateAPIPodStatus. The result has no lastTransitionTime on its
// conditions and keeps the old start time: pass it through Merge before
// writing it.
func Generate(in Input) corev1.PodStatus {
	pod := in.Pod
	old := in.Old
	if old == nil {
		old = &pod.Status
	}
	var s corev1.PodStatus
	s.ObservedGeneration = pod.Generation
	s.QOSClass = old.QOSClass
	if s.QOSClass == "" {
		s.QOSClass = qos.PodQOSClass(pod)
	}
	s.StartTime = old.StartTime.DeepCopy()
	setIPs(&s, in, old)

	byName := containersByName(in.Containers)
	hasInit := len(pod.Spec.InitContainers) > 0
	s.InitContainerStatuses = convertStatuses(pod, pod.Spec.InitContainers, true, hasInit, byName, old.InitContainerStatuses, in.Waiting)
	s.ContainerStatuses = convertStatuses(pod, pod.Spec.Containers, false, hasInit, byName, old.ContainerStatuses, in.Waiting)
	setProbeResults(pod, in.Probes, s.InitContainerStatuses, s.ContainerStatuses)

	all := make([]corev1.ContainerStatus, 0, len(s.InitContainerStatuses)+len(s.ContainerStatuses))
	all = append(append(all, s.InitContainerStatuses...), s.ContainerStatuses...)
	s.Phase = podPhase(pod, all, in.Terminal)
	setPhaseReason(&s, pod, old, in.Override)

	s.Conditions = conditions(pod, old, &s, all, podReadyToStartContainers(pod, in.Sandbox))
	return s
}

// setPhaseReason applies the kubelet's verdict and the rules that keep a
// terminal phase terminal, and carries the phase's reason and message.
func setPhaseReason(s *corev1.PodStatus, pod *corev1.Pod, old *corev1.PodStatus, o *Override) {
	if !terminal(s.Phase) {
		switch {
		case terminal(old.Phase):
			s.Phase = old.Phase
		case terminal(pod.Status.Phase):
			s.Phase = pod.Status.Phase
		}
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	if o != nil && !terminal(old.Phase) && !terminal(pod.Status.Phase) {
		s.Phase, s.Reason, s.Message = o.Phase, o.Reason, o.Message
	}
	if terminal(pod.Status.Phase) && s.Phase != pod.Status.Phase {
		s.Phase = pod.Status.Phase // the API server's terminal phase is final
	}
}

func terminal(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}

// setIPs sets podIP(s) from the sandbox (the first address of the node's
// family, then the first of the other), the node's addresses for
// host-network pods, else keeps the old ones: a stopped sandbox does not
// erase a pod's IP. hostIP(s) are the node's.
func setIPs(s *corev1.PodStatus, in Input, old *corev1.PodStatus) {
	preferV6 := len(in.NodeIPs) > 0 && in.NodeIPs[0].Is6() && !in.NodeIPs[0].Is4In6()
	var ips []netip.Addr
	switch {
	case in.Pod.Spec.HostNetwork:
		ips = in.NodeIPs
	case in.Sandbox != nil && in.Sandbox.State == sandbox.SandboxReady:
		ips = in.Sandbox.IPs
	}
	for _, want6 := range []bool{preferV6, !preferV6} {
		for _, ip := range ips {
			if ip.Unmap().Is6() == want6 {
				s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip.Unmap().String()})
				break
			}
		}
	}
	if len(s.PodIPs) == 0 && len(old.PodIPs) > 0 {
		s.PodIPs = append([]corev1.PodIP(nil), old.PodIPs...)
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	} else {
		s.PodIP = old.PodIP
	}
	for i, ip := range in.NodeIPs {
		if i == 2 {
			break
		}
		s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: ip.Unmap().String()})
	}
	if len(s.HostIPs) > 0 {
		s.HostIP = s.HostIPs[0].IP
	} else {
		s.HostIP, s.HostIPs = old.HostIP, append([]corev1.HostIP(nil), old.HostIPs...)
	}
}

// podReadyToStartContainers is true when no new sandbox is needed: one
// exists, is ready and has its network (an IP, unless host network).
func podReadyToStartContainers(pod *corev1.Pod, sb *sandbox.Sandbox) bool {
	if sb == nil || sb.State != sandbox.SandboxReady {
		return false
	}
	return pod.Spec.HostNetwork || len(sb.IPs) > 0
}

// setProbeResults sets started and ready: a regular init container is
// ready once it exited 0; other containers ask the prober, and only while
// they run.
func setProbeResults(pod *corev1.Pod, p Probes, init, app []corev1.ContainerStatus) {
	set := func(cs *corev1.ContainerStatus, regularInit bool) {
		running := cs.State.Running != nil
		started := running && (p == nil || regularInit || p.Started(pod.UID, cs.Name))
		cs.Started = &started
		switch {
		case regularInit:
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		default:
			cs.Ready = started && (p == nil || p.Ready(pod.UID, cs.Name))
		}
	}
	for i := range init {
		set(&init[i], !isRestartable(initSpec(pod, init[i].Name)))
	}
	for i := range app {
		set(&app[i], false)
	}
}

func initSpec(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// isRestartable says c is a sidecar: an init container with restartPolicy
// Always.
func isRestartable(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// isStatic says the pod comes from a manifest file or URL rather than the
// API server (the kubelet's config source annotation); static pods are
// never given a terminal phase by the kubelet.
func isStatic(pod *corev1.Pod) bool {
	src, ok := pod.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}
