package kubelet

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Event reasons, as Kubernetes' kubelet records them (pkg/kubelet/events).
const (
	EventCreated                 = "Created"
	EventStarted                 = "Started"
	EventFailed                  = "Failed"
	EventKilling                 = "Killing"
	EventPreempting              = "Preempting"
	EventBackOff                 = "BackOff"
	EventExceededGracePeriod     = "ExceededGracePeriod"
	EventPulling                 = "Pulling"
	EventPulled                  = "Pulled"
	EventErrImageNeverPull       = "ErrImageNeverPull"
	EventInspectFailed           = "InspectFailed"
	EventFailedMount             = "FailedMount"
	EventFailedCreatePodSandBox  = "FailedCreatePodSandBox"
	EventSandboxChanged          = "SandboxChanged"
	EventFailedPostStartHook     = "FailedPostStartHook"
	EventFailedPreStopHook       = "FailedPreStopHook"
	EventUnhealthy               = "Unhealthy"
	EventDeadlineExceeded        = "DeadlineExceeded"
	EventDNSConfigForming        = "DNSConfigForming"
	EventFailedPullSecret        = "FailedToRetrieveImagePullSecret"
	EventInvalidEnvironmentNames = "InvalidEnvironmentVariableNames"
	EventFailedSync              = "FailedSync"
)

// Messages of the kubelet's events and statuses that are not built from a
// container name or an error.
const (
	msgDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
	msgPostStartFailed  = "PostStartHook failed"
	msgPreStopFailed    = "PreStopHook failed"
	msgSandboxChanged   = "Pod sandbox changed, it will be killed and re-created."
)

// newBroadcaster starts an event broadcaster writing to the API server.
func newBroadcaster(k *Kubelet) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{Clock: k.clock}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")})
	r := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: k.cfg.NodeName})
	return b, r
}

// podRef is the reference of a pod in events.
func podRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}
}

// containerRef is the reference of one of pod's containers, with the field
// path Kubernetes gives it (spec.containers{app}, spec.initContainers{x}).
func containerRef(pod *corev1.Pod, name string) *corev1.ObjectReference {
	ref := podRef(pod)
	field := "spec.containers"
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			field = "spec.initContainers"
		}
	}
	ref.FieldPath = field + "{" + name + "}"
	return ref
}

// event records an event about the pod.
func (k *Kubelet) event(pod *corev1.Pod, typ, reason, msg string) {
	k.recorder.Event(podRef(pod), typ, reason, msg)
}

// containerEvent records an event about one of the pod's containers.
func (k *Kubelet) containerEvent(pod *corev1.Pod, name, typ, reason, msg string) {
	k.recorder.Event(containerRef(pod, name), typ, reason, msg)
}
