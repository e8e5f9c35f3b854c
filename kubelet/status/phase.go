package status

import (
	corev1 "k8s.io/api/core/v1"
)

// podPhase computes the phase from the container statuses (init and app),
// as the kubelet's getPhase:
//
//   - Failed when a regular init container failed under restartPolicy Never;
//   - Pending while initialization is pending (an init container has not
//     succeeded, or a sidecar has not started) and no app container ever
//     started, or while an app container waits to be started for the first
//     time;
//   - Running when every app container has started and one runs;
//   - when all have stopped: Succeeded if all exited 0, Failed if not — for
//     restartPolicy Never, OnFailure with only successes, or a terminal pod —
//     else Running (they are being restarted).
func podPhase(pod *corev1.Pod, statuses []corev1.ContainerStatus, podIsTerminal bool) corev1.PodPhase {
	byName := make(map[string]*corev1.ContainerStatus, len(statuses))
	for i := range statuses {
		byName[statuses[i].Name] = &statuses[i]
	}
	policy := pod.Spec.RestartPolicy
	pendingInit, failedInit := 0, 0
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0

	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := byName[c.Name]
		if isRestartable(c) {
			switch {
			case !ok:
				unknown++
			case cs.State.Running != nil:
				if cs.Started == nil || !*cs.Started {
					pendingInit++
				}
				running++
			case cs.State.Terminated != nil:
				// a stopped sidecar does not count
			case cs.State.Waiting != nil:
				if cs.LastTerminationState.Terminated == nil {
					pendingInit++
					waiting++
				}
			default:
				pendingInit++
				unknown++
			}
			continue
		}
		switch {
		case !ok, cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil:
			if last := cs.LastTerminationState.Terminated; last != nil {
				if last.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}

	for i := range pod.Spec.Containers {
		cs, ok := byName[pod.Spec.Containers[i].Name]
		switch {
		case !ok:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInit > 0 && policy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 && !anyRegularStarted(pod, byName), waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal && !isStatic(pod) {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if policy == corev1.RestartPolicyAlways || policy == "" {
			return corev1.PodRunning // being restarted
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning // OnFailure: being restarted
	}
	return corev1.PodPending
}

// anyRegularStarted says an app container has run (so the pod was
// initialized, even if a sidecar restarts now).
func anyRegularStarted(pod *corev1.Pod, byName map[string]*corev1.ContainerStatus) bool {
	for i := range pod.Spec.Containers {
		if cs, ok := byName[pod.Spec.Containers[i].Name]; ok && (cs.State.Running != nil || cs.State.Terminated != nil) {
			return true
		}
	}
	return false
}
