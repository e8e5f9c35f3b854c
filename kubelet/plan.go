package kubelet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/sandbox"
)

// podActions is what one sync does to a pod's containers (Kubernetes'
// computePodActions): containers to kill first, then containers to start,
// in order.
type podActions struct {
	kill  []killAction
	start []startAction
}

type killAction struct {
	cs   *sandbox.ContainerStatus
	spec *corev1.Container
	// message is the Killing event's ("" → "Stopping container <name>").
	message string
	// grace overrides the pod's grace period (a probe's
	// terminationGracePeriodSeconds).
	grace *int64
	// remove: remove it once stopped (a leftover never started).
	remove bool
}

type startAction struct {
	spec *corev1.Container
	init bool
	// prev is the container's latest exited attempt, the base of its
	// CrashLoopBackOff.
	prev *sandbox.ContainerStatus
}

// plan decides the sync's actions from the runtime's view of the pod in its
// current sandbox: init containers one at a time (each must exit 0 before
// the next; sidecars must have started), then the app containers, each
// started when missing, restarted per restartPolicy when exited, and killed
// (then restarted) when a liveness or startup probe failed or its spec
// changed.
func (k *Kubelet) plan(w *podWorker, pod *corev1.Pod, rt podRuntime, sb *sandbox.Sandbox) podActions {
	var a podActions
	if !k.planInit(w, pod, rt, sb, &a) {
		return a
	}
	for i := range pod.Spec.Containers {
		k.planContainer(w, pod, rt, sb, &pod.Spec.Containers[i], false, &a)
	}
	return a
}

// planInit plans the init containers and reports whether they are done
// (app containers may run).
func (k *Kubelet) planInit(w *podWorker, pod *corev1.Pod, rt podRuntime, sb *sandbox.Sandbox, a *podActions) bool {
	appStarted := false
	for i := range pod.Spec.Containers {
		if len(rt.byName(pod.Spec.Containers[i].Name, sb.ID)) > 0 {
			appStarted = true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		attempts := rt.byName(c.Name, sb.ID)
		var latest *sandbox.ContainerStatus
		if len(attempts) > 0 {
			latest = attempts[0]
		}
		if isSidecar(c) {
			switch {
			case latest == nil:
				a.start = append(a.start, startAction{spec: c, init: true})
				return false
			case latest.State == sandbox.ContainerStateRunning:
				if k.planRunning(w, pod, rt, c, latest, a) {
					return false
				}
				if !appStarted && !k.prober.Started(pod.UID, c.Name) {
					return false // the next init container waits for it
				}
			default:
				k.planRestart(pod, rt, c, latest, true, a)
				if !appStarted {
					return false
				}
			}
			continue
		}
		switch {
		case latest == nil:
			a.start = append(a.start, startAction{spec: c, init: true, prev: latestExited(rt, c.Name)})
			return false
		case latest.State == sandbox.ContainerStateRunning:
			return false
		case latest.State == sandbox.ContainerStateExited && latest.ExitCode == 0:
			continue
		case latest.State == sandbox.ContainerStateExited:
			if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				a.start = append(a.start, startAction{spec: c, init: true, prev: latest})
			}
			return false
		default: // created but never started, or unknown: start over
			a.kill = append(a.kill, killAction{cs: latest, spec: c, remove: true})
			a.start = append(a.start, startAction{spec: c, init: true, prev: latestExited(rt, c.Name)})
			return false
		}
	}
	return true
}

// planContainer plans one app container.
func (k *Kubelet) planContainer(w *podWorker, pod *corev1.Pod, rt podRuntime, sb *sandbox.Sandbox, c *corev1.Container, init bool, a *podActions) {
	attempts := rt.byName(c.Name, sb.ID)
	if len(attempts) == 0 {
		prev := latestExited(rt, c.Name)
		if prev != nil && !shouldRestart(pod, c, prev) {
			return // it ran to completion in an earlier sandbox
		}
		a.start = append(a.start, startAction{spec: c, init: init, prev: prev})
		return
	}
	latest := attempts[0]
	if latest.State == sandbox.ContainerStateRunning {
		k.planRunning(w, pod, rt, c, latest, a)
		return
	}
	k.planRestart(pod, rt, c, latest, init, a)
}

// planRunning kills a running container whose probe failed or whose spec
// changed, restarting it unless the policy is Never. It reports whether it
// did.
func (k *Kubelet) planRunning(w *podWorker, pod *corev1.Pod, rt podRuntime, c *corev1.Container, cs *sandbox.ContainerStatus, a *podActions) bool {
	var msg string
	var grace *int64
	restart := pod.Spec.RestartPolicy != corev1.RestartPolicyNever || isSidecar(c)
	switch kind := w.takeProbeKill(cs.ID); {
	case cs.Annotations[AnnotationContainerHash] != "" && cs.Annotations[AnnotationContainerHash] != containerHash(c):
		msg = fmt.Sprintf("Container %s definition changed", c.Name)
		restart = true
	case kind == "liveness" && c.LivenessProbe != nil:
		msg = fmt.Sprintf("Container %s failed liveness probe", c.Name)
		grace = c.LivenessProbe.TerminationGracePeriodSeconds
	case kind == "startup" && c.StartupProbe != nil:
		msg = fmt.Sprintf("Container %s failed startup probe", c.Name)
		grace = c.StartupProbe.TerminationGracePeriodSeconds
	default:
		return false
	}
	if restart {
		msg += ", will be restarted"
	}
	a.kill = append(a.kill, killAction{cs: cs, spec: c, message: msg, grace: grace})
	if restart {
		// The back-off looks at the attempt before this one, as the
		// kubelet's does (its pod status predates the kill).
		a.start = append(a.start, startAction{spec: c, init: isSidecar(c), prev: latestExited(rt, c.Name)})
	}
	return true
}

// planRestart plans a container that is not running: exited ones restart
// per policy; leftovers that never started are removed and started again.
func (k *Kubelet) planRestart(pod *corev1.Pod, rt podRuntime, c *corev1.Container, latest *sandbox.ContainerStatus, init bool, a *podActions) {
	switch latest.State {
	case sandbox.ContainerStateExited:
		if shouldRestart(pod, c, latest) {
			a.start = append(a.start, startAction{spec: c, init: init, prev: latest})
		}
	default:
		a.kill = append(a.kill, killAction{cs: latest, spec: c, remove: true})
		a.start = append(a.start, startAction{spec: c, init: init, prev: latestExited(rt, c.Name)})
	}
}

// shouldRestart applies the restart policy to an exited container
// (sidecars always restart).
func shouldRestart(pod *corev1.Pod, c *corev1.Container, exited *sandbox.ContainerStatus) bool {
	if isSidecar(c) {
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exited.ExitCode != 0
	}
	return true
}

// latestExited is the newest exited attempt of a container, in any sandbox.
func latestExited(rt podRuntime, name string) *sandbox.ContainerStatus {
	for _, cs := range rt.byName(name, "") {
		if cs.State == sandbox.ContainerStateExited {
			return cs
		}
	}
	return nil
}

// isSidecar says c is a restartable init container.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// containerSpec finds a container of the pod by name, init containers
// included; isInit says which it is.
func containerSpec(pod *corev1.Pod, name string) (c *corev1.Container, isInit bool) {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], true
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], false
		}
	}
	return nil, false
}
