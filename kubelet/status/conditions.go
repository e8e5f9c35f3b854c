package status

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ownedByKubelet are the condition types the kubelet computes; every other
// condition belongs to someone else and is kept as it is.
var ownedByKubelet = map[corev1.PodConditionType]bool{
	corev1.PodScheduled:              true,
	corev1.PodReady:                  true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReadyToStartContainers: true,
}

// sharedWithKubelet are conditions the kubelet sets but others may too.
var sharedWithKubelet = map[corev1.PodConditionType]bool{corev1.DisruptionTarget: true}

// conditions returns the pod's conditions: those owned by others (from the
// API status), DisruptionTarget (from the kubelet's last status), then
// PodReadyToStartContainers, Initialized, Ready, ContainersReady and
// PodScheduled, in the order Kubernetes lists them.
func conditions(pod *corev1.Pod, old, s *corev1.PodStatus, all []corev1.ContainerStatus, sandboxReady bool) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(pod.Status.Conditions)+5)
	for _, c := range pod.Status.Conditions {
		if !ownedByKubelet[c.Type] && !sharedWithKubelet[c.Type] {
			out = append(out, c)
		}
	}
	for _, c := range old.Conditions {
		if sharedWithKubelet[c.Type] {
			out = append(out, c)
		}
	}
	gen := pod.Generation
	rts := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, ObservedGeneration: gen}
	if sandboxReady {
		rts.Status = corev1.ConditionTrue
	}
	out = append(out, rts)
	out = append(out, initializedCondition(pod, all, s.Phase))
	containersReady := containersReadyCondition(pod, all, s.Phase)
	out = append(out, readyCondition(pod, out, containersReady))
	out = append(out, containersReady)
	out = append(out, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: gen})
	return out
}

func findStatus(all []corev1.ContainerStatus, name string) (*corev1.ContainerStatus, bool) {
	for i := range all {
		if all[i].Name == name {
			return &all[i], true
		}
	}
	return nil, false
}

// unready joins Kubernetes' messages for containers without a status and
// containers not ready (or not complete): "containers with unknown status:
// [a], containers with unready status: [b c]".
func unready(unknown, notReady []string, notReadyWord string) string {
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(notReady) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with %s status: %s", notReadyWord, notReady))
	}
	return strings.Join(msgs, ", ")
}

// containersReadyCondition is True when every app container and sidecar
// is ready.
func containersReadyCondition(pod *corev1.Pod, all []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, ObservedGeneration: pod.Generation}
	if all == nil {
		c.Reason = ReasonUnknownContainerStatuses
		return c
	}
	var unknown, notReady []string
	check := func(name string) {
		if cs, ok := findStatus(all, name); !ok {
			unknown = append(unknown, name)
		} else if !cs.Ready {
			notReady = append(notReady, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isRestartable(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].Name)
	}
	switch {
	case phase == corev1.PodSucceeded && len(unknown) == 0:
		c.Reason = ReasonPodCompleted
	case phase == corev1.PodFailed:
		c.Reason = ReasonPodFailed
	case len(unknown)+len(notReady) > 0:
		c.Reason, c.Message = ReasonContainersNotReady, unready(unknown, notReady, "unready")
	default:
		c.Status = corev1.ConditionTrue
	}
	return c
}

// readyCondition is ContainersReady, further requiring every readiness
// gate's condition to be True.
func readyCondition(pod *corev1.Pod, conds []corev1.PodCondition, containersReady corev1.PodCondition) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodReady, Status: containersReady.Status, ObservedGeneration: pod.Generation}
	if containersReady.Status != corev1.ConditionTrue {
		c.Reason, c.Message = containersReady.Reason, containersReady.Message
		return c
	}
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		var found *corev1.PodCondition
		for i := range conds {
			if conds[i].Type == g.ConditionType {
				found = &conds[i]
				break
			}
		}
		switch {
		case found == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case found.Status != corev1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), found.Status))
		}
	}
	if len(msgs) > 0 {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, ReasonReadinessGatesNotReady, strings.Join(msgs, ", ")
	}
	return c
}

// initializedCondition is True when every regular init container succeeded
// and every sidecar started, or once an app container has run.
func initializedCondition(pod *corev1.Pod, all []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, ObservedGeneration: pod.Generation}
	if all == nil && len(pod.Spec.InitContainers) > 0 {
		c.Reason = ReasonUnknownContainerStatuses
		return c
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		cs, ok := findStatus(all, ic.Name)
		switch {
		case !ok:
			unknown = append(unknown, ic.Name)
		case isRestartable(ic) && (cs.Started == nil || !*cs.Started):
			incomplete = append(incomplete, ic.Name)
		case !isRestartable(ic) && !cs.Ready:
			incomplete = append(incomplete, ic.Name)
		}
	}
	byName := make(map[string]*corev1.ContainerStatus, len(all))
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	switch {
	case phase == corev1.PodSucceeded && len(unknown) == 0:
		c.Status, c.Reason = corev1.ConditionTrue, ReasonPodCompleted
	case anyRegularStarted(pod, byName):
		c.Status = corev1.ConditionTrue
	case len(unknown)+len(incomplete) > 0:
		c.Reason, c.Message = ReasonContainersNotInitialized, unready(unknown, incomplete, "incomplete")
	default:
		c.Status = corev1.ConditionTrue
	}
	return c
}
