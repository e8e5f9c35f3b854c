package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// trackStatus counts finished pods through status.uncountedTerminatedPods
// and finalizer removal, then adds the terminal condition when nothing is
// left to count or to terminate, and writes the status when it changed.
func (c *Controller) trackStatus(ctx context.Context, jc *syncCtx, needsFlush bool) error {
	job := jc.job
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	uncounted := job.Status.UncountedTerminatedPods
	withFinalizer := sets.New[string]()
	for _, p := range jc.pods {
		if hasTrackingFinalizer(p) && !jc.expectedRm.Has(string(p.UID)) {
			withFinalizer.Insert(string(p.UID))
		}
	}
	if countUncounted(&job.Status, withFinalizer) {
		needsFlush = true
	}
	var toRemove []*corev1.Pod
	var newIx []int
	full := false
	for _, p := range jc.pods {
		uid := string(p.UID)
		if !hasTrackingFinalizer(p) || jc.expectedRm.Has(uid) {
			continue
		}
		failed := podFailed(p, job)
		if !(job.DeletionTimestamp != nil || jc.finished != nil || p.Status.Phase == corev1.PodSucceeded || failed) {
			continue // still running: keep its finalizer
		}
		toRemove = append(toRemove, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !jc.uncounted.failed.Has(uid):
			if indexedJob(job) {
				if ix := completionIndex(p); ix != unknownIndex && ix < int(*job.Spec.Completions) && !jc.prevIx[ix] {
					newIx = append(newIx, ix)
					needsFlush = true
				}
			} else if !jc.uncounted.succeeded.Has(uid) {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				needsFlush = true
			}
		case failed || (jc.finished != nil && jc.finished.Type != batchv1.JobSuccessCriteriaMet):
			// A failing job's unfinished pods count as failed.
			ix := completionIndex(p)
			if !jc.uncounted.failed.Has(uid) && (!indexedJob(job) || (ix != unknownIndex && ix < int(*job.Spec.Completions))) {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				needsFlush = true
			}
		}
		if len(newIx)+len(uncounted.Succeeded)+len(uncounted.Failed) >= MaxUncountedPods {
			full = true // the rest next sync, keeping the status small
			break
		}
	}
	if indexedJob(job) {
		for _, ix := range newIx {
			jc.succeededIx[ix] = true
		}
		if s := jc.succeededIx.String(); s != job.Status.CompletedIndexes {
			job.Status.CompletedIndexes = s
			needsFlush = true
		}
		job.Status.Succeeded = int32(len(jc.succeededIx))
	}
	now := c.clock.Now()
	switch {
	case jc.finished != nil && jc.finished.Type == batchv1.JobFailureTarget:
		if conditionTrue(job, batchv1.JobFailureTarget) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *jc.finished)
			needsFlush = true
		}
		jc.finished = newCondition(batchv1.JobFailed, jc.finished.Reason, jc.finished.Message, now)
	case jc.finished != nil && jc.finished.Type == batchv1.JobSuccessCriteriaMet:
		if conditionTrue(job, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *jc.finished)
			needsFlush = true
		}
		jc.finished = newCondition(batchv1.JobComplete, jc.finished.Reason, jc.finished.Message, now)
	}
	needsFlush, err := c.flush(ctx, jc, toRemove, withFinalizer, needsFlush)
	if err != nil {
		return err
	}
	done := !full && c.enactFinished(jc)
	if done {
		needsFlush = true
	}
	if !needsFlush {
		return nil
	}
	if _, err := c.updateStatus(ctx, jc.job); err != nil {
		return err
	}
	if done {
		c.recordFinished(jc.job, jc.finished)
	}
	return nil
}

// flush writes the newly uncounted pods, removes their finalizers, and
// moves the pods whose finalizer is gone into the counters. It returns
// whether the status still has unwritten changes.
func (c *Controller) flush(ctx context.Context, jc *syncCtx, toRemove []*corev1.Pod, withFinalizer sets.Set[string], needsFlush bool) (bool, error) {
	if needsFlush {
		job, err := c.updateStatus(ctx, jc.job)
		if err != nil {
			return true, fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		jc.job = job
		c.backoff.set(jc.key, jc.backoff)
		needsFlush = false
	}
	var rmErr error
	if len(toRemove) > 0 {
		var removed []bool
		removed, rmErr = c.removeFinalizers(ctx, jc.key, toRemove)
		for i, p := range toRemove {
			if removed[i] {
				withFinalizer.Delete(string(p.UID))
			}
		}
	}
	if countUncounted(&jc.job.Status, withFinalizer) {
		needsFlush = true
	}
	if rmErr != nil && needsFlush {
		// Save the partial progress.
		if job, err := c.updateStatus(ctx, jc.job); err == nil {
			jc.job = job
			needsFlush = false
		}
	}
	return needsFlush, rmErr
}

// countUncounted moves the uncounted pods whose finalizer is gone into
// status.succeeded / status.failed and reports whether anything moved.
func countUncounted(status *batchv1.JobStatus, withFinalizer sets.Set[string]) bool {
	u := status.UncountedTerminatedPods
	if u == nil {
		return false
	}
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if withFinalizer.Has(string(uid)) {
				out = append(out, uid)
			}
		}
		return out
	}
	changed := false
	if s := keep(u.Succeeded); len(s) != len(u.Succeeded) {
		status.Succeeded += int32(len(u.Succeeded) - len(s))
		u.Succeeded = s
		changed = true
	}
	if f := keep(u.Failed); len(f) != len(u.Failed) {
		status.Failed += int32(len(u.Failed) - len(f))
		u.Failed = f
		changed = true
	}
	return changed
}

// removeFinalizers removes the tracking finalizer from pods (expecting to
// observe it) and reports which removals succeeded (a pod already gone
// counts as removed).
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = string(p.UID)
	}
	c.finalizers.expect(key, uids)
	ok := make([]bool, len(pods))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			err := c.podControl.PatchPod(ctx, p.Namespace, p.Name, removeFinalizerPatch())
			if err != nil {
				c.finalizers.observed(key, string(p.UID))
				if !apierrors.IsNotFound(err) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
			ok[i] = true
		})
	}
	wg.Wait()
	return ok, errors.Join(errs...)
}

// enactFinished adds the terminal condition once every finished pod is
// counted and no pod is terminating.
func (c *Controller) enactFinished(jc *syncCtx) bool {
	if jc.finished == nil {
		return false
	}
	job := jc.job
	if u := job.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if jc.terminating > 0 {
		return false
	}
	f := jc.finished
	job.Status.Conditions, _ = ensureCondition(job.Status.Conditions, f.Type, corev1.ConditionTrue, f.Reason, f.Message, c.clock.Now())
	if f.Type == batchv1.JobComplete {
		t := findCondition(job.Status.Conditions, batchv1.JobComplete).LastTransitionTime
		job.Status.CompletionTime = &t
	}
	return true
}

func (c *Controller) recordFinished(job *batchv1.Job, cond *batchv1.JobCondition) {
	if cond.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			c.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		return
	}
	c.recorder.Event(job, corev1.EventTypeWarning, cond.Reason, cond.Message)
}

func (c *Controller) updateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	out, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.writes.record(jobKey(out), out, c.clock.Now())
	return out, nil
}
