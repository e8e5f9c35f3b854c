package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/retry"
)

// noteLengthLimit bounds event messages, as the API server validates them.
const noteLengthLimit = 1024

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// bindingCycle binds an assumed pod. A failed bind forgets the assumption,
// wakes the pods that the freed capacity may help, and requeues the pod.
func (s *Scheduler) bindingCycle(ctx context.Context, fw *framework, p *QueuedPodInfo, assumed *corev1.Pod, cycle int64, start time.Time) {
	if err := fw.binder.Bind(ctx, assumed, assumed.Spec.NodeName); err != nil {
		if ferr := s.cache.ForgetPod(assumed); ferr != nil {
			s.log.Error("forgetting assumed pod", "pod", podKey(assumed), "err", ferr)
		}
		if ctx.Err() != nil {
			return // shutting down
		}
		s.queue.MoveAllToActiveOrBackoffQueue(PodDelete)
		s.handleFailure(ctx, fw, p, fmt.Errorf("running Bind plugin %q: %w", binderName(fw.binder), err), cycle, start)
		return
	}
	s.metrics.observeAttempt(ResultScheduled, fw.name, s.since(start))
	s.metrics.podAttempts.Observe(float64(p.Attempts))
	s.log.Debug("bound pod", "pod", podKey(assumed), "node", assumed.Spec.NodeName)
	s.recorders[fw.name].Eventf(assumed, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %v/%v to %v",
		assumed.Namespace, assumed.Name, assumed.Spec.NodeName)
}

func binderName(b Binder) string {
	if n, ok := b.(Named); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", b)
}

// handleFailure records a failed attempt: metrics, the pod back in the
// queue (unless it was deleted or bound meanwhile), a FailedScheduling
// event and the PodScheduled=False condition.
func (s *Scheduler) handleFailure(ctx context.Context, fw *framework, p *QueuedPodInfo, err error, cycle int64, start time.Time) {
	pod := p.Pod
	rejected := errors.Is(err, ErrUnschedulable) || errors.Is(err, ErrNoNodesAvailable)
	reason := corev1.PodReasonSchedulerError
	if rejected {
		reason = corev1.PodReasonUnschedulable
		s.metrics.observeAttempt(ResultUnschedulable, fw.name, s.since(start))
		s.log.Debug("pod is unschedulable", "pod", podKey(pod), "reason", err.Error())
	} else {
		s.metrics.observeAttempt(ResultError, fw.name, s.since(start))
		s.log.Error("error scheduling pod; retrying", "pod", podKey(pod), "err", err)
	}
	p.UnschedulablePlugins = nil
	var fe *FitError
	if errors.As(err, &fe) {
		p.UnschedulablePlugins = fe.Diagnosis.UnschedulablePlugins
	}

	current := pod
	cached, lerr := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case lerr != nil:
		s.log.Debug("pod no longer exists, not requeued", "pod", podKey(pod))
	case cached.UID != pod.UID:
		s.log.Debug("pod was recreated, not requeued", "pod", podKey(pod))
	case cached.Spec.NodeName != "":
		s.log.Debug("pod was bound meanwhile, not requeued", "pod", podKey(pod), "node", cached.Spec.NodeName)
	default:
		current = cached
		p.PodInfo = NewPodInfo(cached)
		s.queue.AddUnschedulableIfNotPresent(p, cycle, rejected)
	}

	msg := err.Error()
	s.recorders[fw.name].Event(current, corev1.EventTypeWarning, "FailedScheduling", truncateMessage(msg))
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg}
	select {
	case s.statusSlots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	s.inflight.Add(1)
	go func() {
		defer func() { <-s.statusSlots; s.inflight.Done() }()
		if err := s.updatePodCondition(ctx, current, cond); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			s.log.Error("updating pod condition", "pod", podKey(current), "err", err)
		}
	}()
}

func truncateMessage(msg string) string {
	if len(msg) <= noteLengthLimit {
		return msg
	}
	const suffix = " ..."
	return msg[:noteLengthLimit-len(suffix)] + suffix
}

// updatePodCondition sets cond on the pod's status with a strategic merge
// patch of pods/status, unless the pod already has it.
func (s *Scheduler) updatePodCondition(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) error {
	status := pod.Status.DeepCopy()
	if !setPodCondition(status, cond, metav1.NewTime(s.opts.clock.Now())) {
		return nil
	}
	oldData, err := json.Marshal(corev1.Pod{Status: pod.Status})
	if err != nil {
		return err
	}
	newData, err := json.Marshal(corev1.Pod{Status: *status})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("creating status patch for pod %s: %w", podKey(pod), err)
	}
	if string(patch) == "{}" {
		return nil
	}
	return retry.OnError(retry.DefaultBackoff, retriable, func() error {
		_, err := s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

func retriable(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}

// setPodCondition sets cond in status, keeping the transition time when
// the status does not change; it reports whether anything changed.
func setPodCondition(status *corev1.PodStatus, cond corev1.PodCondition, now metav1.Time) bool {
	cond.LastTransitionTime = now
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message &&
			old.LastProbeTime.Equal(&cond.LastProbeTime) {
			return false
		}
		*old = cond
		return true
	}
	status.Conditions = append(status.Conditions, cond)
	return true
}
