package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/sandbox"
)

// minGracePeriod is the least time a container gets to stop, as in
// Kubernetes ("always give containers a minimal shutdown window").
const minGracePeriod = 2

// gracePeriod is the grace a container of pod gets: an override (a
// probe's terminationGracePeriodSeconds), else the deletion's, else the
// pod's terminationGracePeriodSeconds.
func gracePeriod(pod *corev1.Pod, override *int64) int64 {
	switch {
	case override != nil:
		return *override
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	}
	return specGracePeriod(pod)
}

// killContainer stops a container as the kubelet's killContainer: a
// Killing event (message, or "Stopping container <name>"), the preStop
// hook (its time counts against the grace period; a failure is a
// FailedPreStopHook event), then StopContainer with what is left of the
// grace period, at least two seconds.
func (k *Kubelet) killContainer(ctx context.Context, pod *corev1.Pod, cs *sandbox.ContainerStatus, spec *corev1.Container, message string, override *int64) error {
	name := cs.Name
	if message == "" {
		message = "Stopping container " + name
	}
	grace := gracePeriod(pod, override)
	k.containerEvent(pod, name, corev1.EventTypeNormal, EventKilling, message)
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && grace > 0 && cs.State == sandbox.ContainerStateRunning {
		grace -= k.runPreStop(ctx, pod, cs, spec, grace)
	}
	grace = max(grace, minGracePeriod)
	err := k.runtime.StopContainer(ctx, cs.ID, time.Duration(grace)*time.Second)
	if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		return fmt.Errorf("stopping container %s (%s) of pod %s: %w", name, cs.ID, podKey(pod), err)
	}
	k.refreshContainer(ctx, cs.ID)
	k.prober.UpdateContainer(pod.UID, name, "", time.Time{}, "")
	return nil
}

// runPreStop runs the preStop hook for at most grace seconds and returns
// the whole seconds it took.
func (k *Kubelet) runPreStop(ctx context.Context, pod *corev1.Pod, cs *sandbox.ContainerStatus, spec *corev1.Container, grace int64) int64 {
	start := k.clock.Now()
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	sb := k.cache.get(pod.UID).latestSandbox()
	go func() {
		defer close(done)
		if _, err := k.runHook(hctx, pod, spec, cs.ID, sb, spec.Lifecycle.PreStop, time.Duration(grace)*time.Second); err != nil {
			k.log.Info("preStop hook failed", "pod", podKey(pod), "container", spec.Name, "err", err)
			k.containerEvent(pod, spec.Name, corev1.EventTypeWarning, EventFailedPreStopHook, msgPreStopFailed)
		}
	}()
	t := k.clock.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		k.log.Info("preStop hook did not complete within the grace period", "pod", podKey(pod), "container", spec.Name, "grace", grace)
	case <-ctx.Done():
	}
	return int64(k.clock.Since(start) / time.Second)
}

// killContainers kills the running (or created) containers among cs in
// parallel, with pod's grace period (or override).
func (k *Kubelet) killContainers(ctx context.Context, pod *corev1.Pod, cs []*sandbox.ContainerStatus, override *int64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(cs))
	for i, c := range cs {
		if c.State != sandbox.ContainerStateRunning && c.State != sandbox.ContainerStateCreated {
			continue
		}
		spec, _ := containerSpec(pod, c.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.killContainer(ctx, pod, c, spec, "", override)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// removeContainer removes a stopped container with its snapshot and
// termination log.
func (k *Kubelet) removeContainer(ctx context.Context, w *podWorker, cs *sandbox.ContainerStatus) error {
	if err := k.runtime.RemoveContainer(ctx, cs.ID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		return fmt.Errorf("removing container %s (%s): %w", cs.Name, cs.ID, err)
	}
	k.cache.deleteContainer(cs.ID)
	k.releaseContainerFiles(ctx, cs.Annotations)
	if w != nil {
		delete(w.st.termMessages, cs.ID)
	}
	return nil
}

// gcContainers keeps, per container name, the newest attempt and at most
// one exited attempt besides it (what lastState and `logs --previous`
// need), and removes the rest; stopped sandboxes left without containers
// are removed too.
func (k *Kubelet) gcContainers(ctx context.Context, w *podWorker, pod *corev1.Pod) {
	rt := k.cache.get(pod.UID)
	seen := map[string]int{}
	keptExited := map[string]bool{}
	for _, cs := range rt.Containers {
		n := seen[cs.Name]
		seen[cs.Name]++
		if n == 0 {
			if cs.State == sandbox.ContainerStateExited {
				keptExited[cs.Name] = true
			}
			continue
		}
		if cs.State == sandbox.ContainerStateRunning {
			continue
		}
		if cs.State == sandbox.ContainerStateExited && !keptExited[cs.Name] {
			keptExited[cs.Name] = true
			continue
		}
		if err := k.removeContainer(ctx, w, cs); err != nil {
			k.log.Warn("removing an old container", "pod", podKey(pod), "err", err)
		}
	}
	rt = k.cache.get(pod.UID)
	latest := rt.latestSandbox()
	for _, sb := range rt.Sandboxes {
		if sb == latest || sb.State == sandbox.SandboxReady {
			continue
		}
		used := false
		for _, cs := range rt.Containers {
			used = used || cs.SandboxID == sb.ID
		}
		if used {
			continue
		}
		if err := k.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			k.log.Warn("removing an old sandbox", "pod", podKey(pod), "sandbox", sb.ID, "err", err)
			continue
		}
		k.cache.deleteSandbox(pod.UID, sb.ID)
	}
}
