package kubelet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
)

// Errors of LogFile, for the log server to map to HTTP statuses.
var (
	// ErrPodNotFound: no pod of that name runs on this node.
	ErrPodNotFound = errors.New("pod not found")
	// ErrContainerNotFound: the pod has no such container, or its
	// container is not known to the runtime.
	ErrContainerNotFound = errors.New("container not found")
	// ErrContainerWaiting: the container has not started yet.
	ErrContainerWaiting = errors.New("container is waiting to start")
	// ErrNoPrevious: there is no previous terminated instance.
	ErrNoPrevious = errors.New("previous terminated container not found")
)

// LogFile returns the CRI log file of a container of a pod on this node, as
// the kubelet's log endpoint picks it: the current instance (running, or
// terminated and not restarted yet, or the last terminated one while the
// next waits), or with previous the last terminated instance. running says
// the file may still grow (follow it). Errors wrap the sentinels above with
// Kubernetes' messages, e.g. `container "app" in pod "web" is waiting to
// start: ContainerCreating`.
func (k *Kubelet) LogFile(namespace, pod, container string, previous bool) (path string, running bool, err error) {
	w := k.findWorker(namespace, pod)
	if w == nil {
		return "", false, fmt.Errorf("pod %q in namespace %q: %w", pod, namespace, ErrPodNotFound)
	}
	view := w.view()
	if view == nil {
		return "", false, fmt.Errorf("pod %q in namespace %q: %w", pod, namespace, ErrPodNotFound)
	}
	spec, last := view, &view.Status
	if c, _ := containerSpec(spec, container); c == nil {
		return "", false, fmt.Errorf("container %s is not valid for pod %s: %w", container, pod, ErrContainerNotFound)
	}
	var cs corev1.ContainerStatus
	found := false
	for _, list := range [][]corev1.ContainerStatus{last.InitContainerStatuses, last.ContainerStatuses} {
		for _, s := range list {
			if s.Name == container {
				cs, found = s, true
			}
		}
	}
	if !found {
		return "", false, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet: %w", container, pod, ErrContainerWaiting)
	}
	var id string
	lastTerm := cs.LastTerminationState.Terminated
	switch {
	case previous:
		if lastTerm == nil || lastTerm.ContainerID == "" {
			return "", false, fmt.Errorf("previous terminated container %q in pod %q not found: %w", container, pod, ErrNoPrevious)
		}
		id = lastTerm.ContainerID
	case cs.State.Running != nil:
		id, running = cs.ContainerID, true
	case cs.State.Terminated != nil:
		id = cs.ContainerID
		if id == "" && lastTerm != nil {
			id = lastTerm.ContainerID
		}
		if id == "" {
			return "", false, fmt.Errorf("container %q in pod %q is terminated: %w", container, pod, ErrContainerNotFound)
		}
	case lastTerm != nil && lastTerm.ContainerID != "":
		id = lastTerm.ContainerID
	case cs.State.Waiting != nil:
		reason := cs.State.Waiting.Reason
		switch reason {
		case status.ReasonErrImagePull:
			reason = "image can't be pulled"
		case status.ReasonImagePullBackOff:
			reason = "trying and failing to pull image"
		}
		return "", false, fmt.Errorf("container %q in pod %q is waiting to start: %s: %w", container, pod, reason, ErrContainerWaiting)
	default:
		return "", false, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet: %w", container, pod, ErrContainerWaiting)
	}
	id = status.ParseContainerID(id)
	for _, c := range k.cache.get(w.uid).Containers {
		if c.ID != id {
			continue
		}
		if c.LogPath == "" {
			return "", false, fmt.Errorf("container %q in pod %q has no log file: %w", container, pod, ErrContainerNotFound)
		}
		running = running && c.State == sandbox.ContainerStateRunning
		return c.LogPath, running, nil
	}
	// The runtime forgot the container; its log may remain.
	if p := k.logPathByAttempt(spec, container, cs, previous); p != "" {
		return p, false, nil
	}
	return "", false, fmt.Errorf("container %q (%s) in pod %q: %w", container, id, pod, ErrContainerNotFound)
}

// logPathByAttempt guesses the log of an attempt the runtime no longer
// knows from the restart count.
func (k *Kubelet) logPathByAttempt(pod *corev1.Pod, container string, cs corev1.ContainerStatus, previous bool) string {
	n := cs.RestartCount
	if previous || cs.State.Running == nil && cs.State.Terminated == nil {
		n--
	}
	if n < 0 {
		return ""
	}
	p := filepath.Join(k.containerLogDir(pod, container), fmt.Sprintf("%d.log", n))
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// findWorker finds the worker of a pod by namespace and name.
func (k *Kubelet) findWorker(namespace, name string) *podWorker {
	for _, w := range k.workers.all() {
		w.mu.Lock()
		match := w.pod != nil && w.pod.Namespace == namespace && w.pod.Name == name && !w.removed
		w.mu.Unlock()
		if match {
			return w
		}
	}
	return nil
}

// Pods returns the pods this kubelet runs (static pods included), each with
// the status the kubelet generated last, fresher than the API server's copy
// (for the kubelet's /pods endpoint and its log server).
func (k *Kubelet) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, w := range k.workers.all() {
		if p := w.view(); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Pod returns one pod of this node by namespace and name, as Pods does.
func (k *Kubelet) Pod(namespace, name string) (*corev1.Pod, bool) {
	w := k.findWorker(namespace, name)
	if w == nil {
		return nil, false
	}
	p := w.view()
	return p, p != nil
}

// view is the worker's pod with its latest status, nil for a pod gone from
// its source.
func (w *podWorker) view() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pod == nil || w.removed {
		return nil
	}
	p := w.pod.DeepCopy()
	if w.lastStatus != nil {
		p.Status = *w.lastStatus.DeepCopy()
	}
	return p
}
