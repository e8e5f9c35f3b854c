package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podkit/podkit/controller"
)

var timeZero time.Time

// manageJob creates or deletes pods towards the wanted number of active
// pods and returns the new active count. It deletes or creates, never
// both in one sync.
func (c *Controller) manageJob(ctx context.Context, job *batchv1.Job, jc *syncCtx) (int32, error) {
	active := int32(len(jc.active))
	if suspended(job) {
		removedReady, removed, err := c.deleteJobPods(ctx, job, jc.key, podsForRemoval(job, jc.active, len(jc.active)))
		jc.terminating += removed
		jc.ready -= removedReady
		return active - removed, err
	}
	parallelism := *job.Spec.Parallelism
	var want int32
	if job.Spec.Completions == nil {
		// Without completions: parallelism until one succeeds, then let the
		// running ones finish.
		want = parallelism
		if jc.succeeded > 0 {
			want = active
		}
	} else {
		want = max(min(*job.Spec.Completions-jc.succeeded, parallelism), 0)
	}
	if rm := podsForRemoval(job, jc.active, int(max(active-want, 0))); len(rm) > 0 {
		if len(rm) > MaxPodCreateDeletePerSync {
			rm = rm[:MaxPodCreateDeletePerSync]
		}
		removedReady, removed, err := c.deleteJobPods(ctx, job, jc.key, rm)
		jc.terminating += removed
		jc.ready -= removedReady
		return active - removed, err
	}
	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = jc.terminating
	}
	diff := want - terminating - active
	if diff <= 0 {
		return active, nil
	}
	if wait := jc.backoff.remaining(c.clock.Now(), c.opts.backoff, c.opts.maxBackoff); wait > 0 {
		c.queue.AddAfter(jc.key, wait)
		return active, nil
	}
	diff = min(diff, MaxPodCreateDeletePerSync)
	var indexes []int
	if indexedJob(job) {
		indexes = pendingIndexes(jc, int(diff), int(*job.Spec.Completions))
		diff = int32(len(indexes))
		if diff == 0 {
			return active, nil
		}
	}
	created, err := c.createPods(ctx, job, jc.key, int(diff), indexes)
	return active + int32(created), err
}

// createPods creates n pods (one per index for an Indexed Job) in
// slow-start batches, with creation expectations.
func (c *Controller) createPods(ctx context.Context, job *batchv1.Job, key string, n int, indexes []int) (int, error) {
	template := job.Spec.Template.DeepCopy()
	if indexedJob(job) {
		addIndexEnv(template)
	}
	if !containsString(template.Finalizers, batchv1.JobTrackingFinalizer) {
		template.Finalizers = append(template.Finalizers, batchv1.JobTrackingFinalizer)
	}
	ref := controller.OwnerRef(job, controllerKind)
	c.expectations.ExpectCreations(key, n)
	var attempted atomic.Int64
	succeeded, err := controller.SlowStartBatch(n, controller.SlowStartInitialBatch, func() error {
		i := int(attempted.Add(1)) - 1
		t, generateName := template, ""
		if indexes != nil {
			t = indexTemplate(job, template, indexes[i])
			generateName = fmt.Sprintf("%s-%d-", job.Name, indexes[i])
		}
		_, err := c.podControl.CreatePod(ctx, job.Namespace, t, job, ref, generateName)
		if err != nil {
			// No watch event will come for it.
			c.expectations.CreationObserved(key)
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
		}
		return err
	})
	if skipped := n - int(attempted.Load()); skipped > 0 {
		c.expectations.Lower(key, skipped, 0)
	}
	return succeeded, err
}

// podsForRemoval returns at least n active pods to delete, the ones in
// the earliest stages first (and, for Indexed Jobs, every duplicate or
// out-of-range index).
func podsForRemoval(job *batchv1.Job, active []*corev1.Pod, n int) []*corev1.Pod {
	var rm []*corev1.Pod
	left := active
	if indexedJob(job) {
		rm, left = duplicateIndexPods(active, int(*job.Spec.Completions))
	}
	if len(rm) < n {
		left = append([]*corev1.Pod(nil), left...)
		controller.RankPodsForDeletion(left, nil, timeZero)
		rm = append(rm, left[:min(n-len(rm), len(left))]...)
	}
	return rm
}

// deleteJobPods removes the tracking finalizer (the pod is not counted: it
// never finished) and deletes each pod, with deletion expectations. It
// returns how many ready pods and how many pods were deleted.
func (c *Controller) deleteJobPods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) (int32, int32, error) {
	if len(pods) == 0 {
		return 0, 0, nil
	}
	c.expectations.ExpectDeletions(key, controller.PodKeys(pods))
	return c.deletePods(ctx, job, pods, func(p *corev1.Pod) error {
		if hasTrackingFinalizer(p) {
			if err := c.podControl.PatchPod(ctx, p.Namespace, p.Name, removeFinalizerPatch()); err != nil {
				return fmt.Errorf("removing tracking finalizer: %w", err)
			}
		}
		return c.podControl.DeletePod(ctx, p.Namespace, p.Name, job)
	}, func(p *corev1.Pod) { c.expectations.DeletionObserved(key, controller.PodKey(p)) })
}

// deleteActivePods deletes the active pods of a failing or finished job,
// keeping their finalizers: they are counted as failed when the status is
// tracked.
func (c *Controller) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (int32, int32, error) {
	return c.deletePods(ctx, job, pods, func(p *corev1.Pod) error {
		return c.podControl.DeletePod(ctx, p.Namespace, p.Name, job)
	}, nil)
}

func (c *Controller) deletePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod, del func(*corev1.Pod) error, failed func(*corev1.Pod)) (int32, int32, error) {
	var readyDeleted, deleted atomic.Int32
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() {
			err := del(p)
			if err != nil && failed != nil {
				failed(p)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			deleted.Add(1)
			if controller.IsPodReady(p) {
				readyDeleted.Add(1)
			}
		})
	}
	wg.Wait()
	return readyDeleted.Load(), deleted.Load(), errors.Join(errs...)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
