package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/kubelet/volume"
	"github.com/podkit/podkit/sandbox"
)

// syncWorker runs one sync of w's pod: the termination path for a pod that
// is gone or being deleted, otherwise syncPod and, once the pod is
// terminal, the release of its resources.
func (k *Kubelet) syncWorker(ctx context.Context, w *podWorker) (time.Time, workerOutcome) {
	pod, removed := w.snapshot()
	start := k.clock.Now()
	op := "sync"
	if w.st.last == nil {
		op = "create"
	}
	defer func() { k.metrics.podWorker.WithLabelValues(op).Observe(k.clock.Since(start).Seconds()) }()
	retry := k.cfg.RetryInterval

	switch {
	case removed:
		op = "terminate"
		if err := k.terminatePod(ctx, w, pod, false); err != nil {
			k.log.Warn("tearing down a removed pod", "pod", podKey(pod), "err", err)
			return start.Add(retry), workerContinues
		}
		if isStaticPod(pod) {
			k.mirrors.delete(ctx, pod)
		}
		k.forgetPod(pod)
		return start, workerDone
	case pod.DeletionTimestamp != nil && !isStaticPod(pod):
		op = "terminate"
		if err := k.terminatePod(ctx, w, pod, true); err != nil {
			k.log.Warn("terminating a deleted pod", "pod", podKey(pod), "err", err)
			return start.Add(retry), workerContinues
		}
		if err := k.finishDeletion(ctx, w, pod); err != nil {
			k.log.Warn("finishing a pod's deletion", "pod", podKey(pod), "err", err)
			return start.Add(retry), workerContinues
		}
		k.forgetPod(pod)
		return start, workerDeletedPod
	case w.st.terminated:
		return start.Add(k.cfg.ResyncInterval), workerContinues
	}

	runCtx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	w.cancelRun = cancel
	w.mu.Unlock()
	next, terminal := k.syncPod(runCtx, w, pod)
	w.mu.Lock()
	w.cancelRun = nil
	w.mu.Unlock()
	interrupted := runCtx.Err() != nil
	cancel()
	if interrupted && ctx.Err() == nil {
		return start, workerContinues // deleted meanwhile: terminate now
	}
	if !terminal || ctx.Err() != nil {
		return next, workerContinues
	}
	if err := k.stopTerminalPod(ctx, w, pod); err != nil {
		k.log.Warn("stopping a finished pod", "pod", podKey(pod), "err", err)
		return start.Add(retry), workerContinues
	}
	return start.Add(k.cfg.ResyncInterval), workerContinues
}

// syncPod drives a pod towards running, in the order of the birth
// sequence, and reports its status. It returns when to sync again, and
// whether the pod reached a terminal phase.
func (k *Kubelet) syncPod(ctx context.Context, w *podWorker, pod *corev1.Pod) (time.Time, bool) {
	st := &w.st
	static := isStaticPod(pod)
	retry := k.cfg.RetryInterval
	t0 := k.clock.Now()
	if static {
		k.mirrors.ensure(ctx, w, pod)
	}
	// A pod the API already reports finished is not run again.
	if !static && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		return t0, true
	}
	rt := k.cache.get(pod.UID)

	// Node admission, once.
	if !st.admitted {
		if reason, msg := k.admitOnce(w, pod, rt); reason != "" {
			k.event(pod, corev1.EventTypeWarning, reason, msg)
			st.override = &status.Override{Phase: corev1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg}
			k.reportStatus(w, pod, true)
			return t0, true
		}
		k.prober.AddPod(pod)
		k.step(st, StepAdmit, t0)
	}
	if end, ok := k.deadline(w, pod); ok && !k.clock.Now().Before(end) {
		k.event(pod, corev1.EventTypeNormal, EventDeadlineExceeded, msgDeadlineExceeded)
		st.override = &status.Override{Phase: corev1.PodFailed, Reason: EventDeadlineExceeded, Message: msgDeadlineExceeded}
		k.reportStatus(w, pod, true)
		return t0, true
	}

	// Soft admission: the pod waits, Pending, while it cannot run here.
	if reason, msg := k.softAdmit(pod); reason != "" {
		k.blockPod(ctx, w, pod, rt, reason, msg)
		return t0.Add(k.cfg.ResyncInterval), false
	} else if st.override != nil && st.override.Phase == corev1.PodPending {
		st.override = nil
		clearWaiting(st, reasonBlocked)
	}

	parent, err := k.ensureCgroup(ctx, pod)
	if err != nil {
		k.event(pod, corev1.EventTypeWarning, EventFailedSync, fmt.Sprintf("error making pod data directories or cgroup: %v", err))
		k.reportStatus(w, pod, false)
		return t0.Add(retry), false
	}
	st.cgroup = parent
	k.step(st, StepCgroup, t0)
	if err := k.makePodDirs(st, pod); err != nil {
		k.event(pod, corev1.EventTypeWarning, EventFailedSync, fmt.Sprintf("error making pod data directories: %v", err))
		k.reportStatus(w, pod, false)
		return t0.Add(retry), false
	}
	t1 := k.clock.Now()
	paths, err := k.volumes.Setup(ctx, pod)
	if err != nil {
		k.reportVolumeErrors(pod, err)
		k.reportStatus(w, pod, false)
		return t0.Add(retry), false
	}
	st.paths = paths
	k.step(st, StepVolumes, t1)

	t2 := k.clock.Now()
	sb, fresh, err := k.ensureSandbox(ctx, w, pod, rt, parent)
	if err != nil {
		k.reportStatus(w, pod, false)
		return t0.Add(retry), false
	}
	if fresh {
		k.step(st, StepSandbox, t2)
	}

	wake := k.clock.Now().Add(k.cfg.ResyncInterval)
	if sb != nil && sb.State == sandbox.SandboxReady {
		rt = k.cache.get(pod.UID)
		plan := k.plan(w, pod, rt, sb)
		if t := k.execute(ctx, w, pod, sb, plan, rt); !t.IsZero() && t.Before(wake) {
			wake = t
		}
		k.gcContainers(ctx, w, pod)
		k.updateProber(pod, sb)
	}
	s := k.reportStatus(w, pod, false)
	// After the report: the first one sets the start time the deadline
	// counts from.
	if end, ok := k.deadline(w, pod); ok && end.Before(wake) {
		wake = end
	}
	terminal := !static && (s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed)
	return wake, terminal
}

// admitOnce admits the pod on its first sync: a pod the runtime already
// runs (a restarted kubelet) is admitted as it is.
func (k *Kubelet) admitOnce(w *podWorker, pod *corev1.Pod, rt podRuntime) (string, string) {
	k.admitMu.Lock()
	defer k.admitMu.Unlock()
	if len(rt.Sandboxes) == 0 && len(rt.Containers) == 0 {
		if reason, msg := k.admit(pod); reason != "" {
			return reason, msg
		}
	}
	w.st.admitted = true
	w.setActive(true)
	return "", ""
}

// deadline returns when the pod's activeDeadlineSeconds ends, counted from
// its start time as the kubelet reported it.
func (k *Kubelet) deadline(w *podWorker, pod *corev1.Pod) (time.Time, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || isStaticPod(pod) {
		return time.Time{}, false
	}
	start := pod.Status.StartTime
	if w.st.last != nil && w.st.last.StartTime != nil {
		start = w.st.last.StartTime
	}
	if start == nil {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second), true
}

// step records the duration of a start step the first time it completes.
func (k *Kubelet) step(st *podState, name string, since time.Time) {
	if st.startObserved || !st.steps.add(name) {
		return
	}
	k.birthStep(st, name)
	k.metrics.podStep.WithLabelValues(name).Observe(k.clock.Since(since).Seconds())
}

// ensureCgroup creates the pod's cgroup in its QoS tier ("" without
// cgroups).
func (k *Kubelet) ensureCgroup(ctx context.Context, pod *corev1.Pod) (string, error) {
	if k.cgroups == nil {
		return "", nil
	}
	p, err := k.cgroups.EnsurePod(ctx, pod)
	if err != nil {
		return "", fmt.Errorf("pod %s cgroup: %w", podKey(pod), err)
	}
	return p, nil
}

// reportVolumeErrors records one FailedMount event per failed volume.
func (k *Kubelet) reportVolumeErrors(pod *corev1.Pod, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var ve *volume.VolumeError
		if errors.As(e, &ve) {
			k.event(pod, corev1.EventTypeWarning, EventFailedMount, ve.Error())
			continue
		}
		k.event(pod, corev1.EventTypeWarning, EventFailedMount, e.Error())
	}
}

// podKey names a pod in logs.
func podKey(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}
