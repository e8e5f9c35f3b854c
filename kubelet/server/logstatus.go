package server

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Waiting reasons with a friendlier log message, as the kubelet words them.
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
)

// hasContainer reports whether the pod's spec has a container of that
// name: an app, init or ephemeral container.
func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// containerStatus finds a container's status among app, init and
// ephemeral container statuses.
func containerStatus(st *corev1.PodStatus, name string) (*corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], true
			}
		}
	}
	return nil, false
}

// LogContainerID returns the containerID (as the pod status holds it,
// "podkit://<id>") of the container instance whose log a request for
// container means, or the error the user sees, following the kubelet's
// validateContainerLogStatus: previous asks for lastState.terminated;
// otherwise the running instance, else the terminated one (or the one
// before it when the last never started), else the last terminated one; a
// waiting container has no log yet.
func LogContainerID(pod *corev1.Pod, container string, previous bool) (string, error) {
	cs, found := containerStatus(&pod.Status, container)
	if !found {
		return "", fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := cs.LastTerminationState.Terminated
	waiting, running, terminated := cs.State.Waiting, cs.State.Running, cs.State.Terminated
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return last.ContainerID, nil
	case running != nil:
		return cs.ContainerID, nil
	case terminated != nil:
		if terminated.ContainerID != "" {
			return terminated.ContainerID, nil
		}
		if last != nil && last.ContainerID != "" {
			return last.ContainerID, nil
		}
		return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
		return last.ContainerID, nil
	case waiting != nil:
		switch waiting.Reason {
		case reasonErrImagePull:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case reasonImagePullBackOff:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %v", container, pod.Name, waiting.Reason)
		}
	default:
		return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
	}
}
