package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
)

// syncCtx is one sync's view of a job.
type syncCtx struct {
	key         string
	job         *batchv1.Job
	pods        []*corev1.Pod // claimed, tracking finalizer as if adopted
	active      []*corev1.Pod
	ready       int32
	terminating int32
	succeeded   int32
	failed      int32
	uncounted   struct{ succeeded, failed sets.Set[string] }
	expectedRm  sets.Set[string] // finalizer removals not yet observed
	backoff     backoffRecord
	finished    *batchv1.JobCondition // interim or terminal condition to reach
	prevIx      indexSet              // Indexed: completions recorded in status
	succeededIx indexSet              // Indexed: recorded plus newly succeeded
}

// sync brings one job one step closer to its spec.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || ns == "" || name == "" {
		return nil
	}
	shared, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		c.finalizers.delete(key)
		c.writes.delete(key)
		c.backoff.remove(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting job %s: %w", key, err)
	}
	if stale, left := c.writes.stale(key, shared, c.clock.Now()); stale {
		// The cache has not seen this controller's last status write: what
		// it says about counted pods is out of date (statuswrites.go). The
		// write's watch event queues the job again; left is a backstop.
		c.queue.AddAfter(key, left)
		return nil
	}
	if m := shared.Spec.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		return nil
	}
	if finished(shared) {
		c.backoff.remove(key)
		return nil
	}
	if mode := shared.Spec.CompletionMode; mode != nil && *mode != batchv1.NonIndexedCompletion && *mode != batchv1.IndexedCompletion {
		c.recorder.Event(shared, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if indexedJob(shared) && shared.Spec.Completions == nil {
		return nil // invalid; the API server rejects it
	}
	job := shared.DeepCopy()
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	if job.Spec.BackoffLimit == nil {
		job.Spec.BackoffLimit = ptr.To[int32](6)
	}
	if job.Spec.Parallelism == nil {
		job.Spec.Parallelism = ptr.To[int32](1)
	}
	// Expectations are read before the pods, so a pod created after the
	// read cannot sneak in uncounted.
	satisfied := c.expectations.Satisfied(key)
	pods, err := c.podsForJob(ctx, job)
	if err != nil {
		return err
	}
	jc := &syncCtx{key: key, job: job, pods: pods, active: controller.FilterActivePods(pods), expectedRm: c.finalizers.get(key)}
	jc.ready = countReady(jc.active)
	jc.terminating = countTerminating(pods)
	jc.uncounted.succeeded = uidSet(job.Status.UncountedTerminatedPods.Succeeded)
	jc.uncounted.failed = uidSet(job.Status.UncountedTerminatedPods.Failed)
	newSucceeded, newFailed := c.newlyFinished(jc)
	jc.succeeded = job.Status.Succeeded + int32(len(newSucceeded)+jc.uncounted.succeeded.Len())
	jc.failed = job.Status.Failed + int32(len(newFailed)+jc.uncounted.failed.Len())
	now := c.clock.Now()
	startChanged := false
	if job.Status.StartTime == nil && !suspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
		startChanged = true
	}
	jc.backoff = c.backoff.next(key, newSucceeded, newFailed)

	if jc.finished = conditionTrue(job, batchv1.JobSuccessCriteriaMet); jc.finished == nil {
		if ft := conditionTrue(job, batchv1.JobFailureTarget); ft != nil {
			jc.finished = ft
		}
	}
	if jc.finished == nil {
		switch {
		case jc.failed > *job.Spec.BackoffLimit || pastBackoffLimitOnFailure(job, pods):
			jc.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, MessageBackoffLimitExceeded, now)
		case c.pastActiveDeadline(job):
			jc.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, MessageDeadlineExceeded, now)
		case job.Spec.ActiveDeadlineSeconds != nil && !suspended(job):
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(job.Status.StartTime.Time)
			c.queue.AddAfter(key, max(left, 0))
		}
	}
	if indexedJob(job) {
		jc.prevIx, jc.succeededIx = succeededIndexes(job, pods)
		jc.succeeded = int32(len(jc.succeededIx))
	}

	active := int32(len(jc.active))
	suspendChanged := false
	var manageErr error
	if jc.finished != nil {
		// Failing or done: no active pod may remain.
		deletedReady, deleted, err := c.deleteActivePods(ctx, job, jc.active)
		if deleted != active || !satisfied {
			jc.finished = nil // not all gone yet, or the cache lags: next sync
		}
		active -= deleted
		jc.terminating += deleted
		jc.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			active, manageErr = c.manageJob(ctx, job, jc)
			managed = true
		}
		var complete bool
		if job.Spec.Completions == nil {
			complete = jc.succeeded > 0 && active == 0
		} else {
			complete = jc.succeeded >= *job.Spec.Completions && active == 0
		}
		switch {
		case complete:
			jc.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, MessageCompletionsReached, now)
		case managed && suspended(job):
			var changed bool
			job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now)
			if changed {
				suspendChanged = true
				c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
			}
		case managed:
			var changed bool
			job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
			if changed {
				suspendChanged = true
				c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
				// activeDeadlineSeconds counts continuous activity.
				job.Status.StartTime = ptr.To(metav1.NewTime(now))
			}
		}
	}
	needsUpdate := suspendChanged || startChanged || active != job.Status.Active ||
		!ptr.Equal(job.Status.Ready, &jc.ready) || !ptr.Equal(job.Status.Terminating, &jc.terminating)
	job.Status.Active = active
	job.Status.Ready = ptr.To(jc.ready)
	job.Status.Terminating = ptr.To(jc.terminating)
	if err := c.trackStatus(ctx, jc, needsUpdate); err != nil {
		return errors.Join(fmt.Errorf("tracking status of job %s: %w", key, err), manageErr)
	}
	return manageErr
}

func (c *Controller) pastActiveDeadline(job *batchv1.Job) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || suspended(job) {
		return false
	}
	return c.clock.Since(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// podsForJob claims the job's pods: its own plus matching orphans, which
// it adopts (owner reference and tracking finalizer).
func (c *Controller) podsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("job %s/%s: invalid selector: %w", job.Namespace, job.Name, err)
	}
	candidates, err := controller.ByControllerUID[*corev1.Pod](c.podIndex, string(job.UID), job.Namespace)
	if err != nil {
		return nil, err
	}
	get := func(ctx context.Context) (metav1.Object, error) {
		return c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	}
	m := &controller.RefManager{Controller: job, Kind: controllerKind, Selector: sel,
		CanAdopt: controller.RecheckDeletionTimestamp(controller.FreshUID(job.UID, get))}
	ref := controller.OwnerRef(job, controllerKind)
	var claimed []*corev1.Pod
	var errs []error
	for _, p := range candidates {
		ok, err := m.Claim(ctx, p,
			func(o metav1.Object) bool { return !sel.Empty() && sel.Matches(labels.Set(o.GetLabels())) },
			func(ctx context.Context, o metav1.Object) error {
				return c.podControl.PatchPod(ctx, o.GetNamespace(), o.GetName(), adoptPatch(ref, o.GetUID()))
			},
			func(ctx context.Context, o metav1.Object) error {
				return c.podControl.PatchPod(ctx, o.GetNamespace(), o.GetName(), controller.ReleasePatch(job.UID, o.GetUID()))
			})
		if err != nil {
			errs = append(errs, err)
		}
		if !ok {
			continue
		}
		if !metav1.IsControlledBy(p, job) && !hasTrackingFinalizer(p) {
			// Adopted just now, with the finalizer: count it as such.
			p = p.DeepCopy()
			p.Finalizers = append(p.Finalizers, batchv1.JobTrackingFinalizer)
		}
		claimed = append(claimed, p)
	}
	return claimed, errors.Join(errs...)
}

// adoptPatch adds the owner reference and the tracking finalizer.
func adoptPatch(ref *metav1.OwnerReference, uid any) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}],"uid":%q,"finalizers":[%q]}}`,
		ref.APIVersion, ref.Kind, ref.Name, ref.UID, uid, batchv1.JobTrackingFinalizer))
}

// newlyFinished returns the tracked pods that finished and are counted
// nowhere yet.
func (c *Controller) newlyFinished(jc *syncCtx) (succeeded, failed []*corev1.Pod) {
	for _, p := range jc.pods {
		uid := string(p.UID)
		if !hasTrackingFinalizer(p) || jc.expectedRm.Has(uid) {
			continue
		}
		if indexedJob(jc.job) {
			if ix := completionIndex(p); ix == unknownIndex || ix >= int(*jc.job.Spec.Completions) {
				continue
			}
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !jc.uncounted.succeeded.Has(uid):
			succeeded = append(succeeded, p)
		case podFailed(p, jc.job) && !jc.uncounted.failed.Has(uid):
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

func uidSet[T ~string](uids []T) sets.Set[string] {
	s := sets.New[string]()
	for _, u := range uids {
		s.Insert(string(u))
	}
	return s
}

func countReady(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if controller.IsPodReady(p) {
			n++
		}
	}
	return n
}

func countTerminating(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}
