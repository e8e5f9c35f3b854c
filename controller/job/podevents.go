package job

import (
	"context"
	"fmt"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podkit/podkit/controller"
)

func hasTrackingFinalizer(p *corev1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return true
		}
	}
	return false
}

func jobKey(j *batchv1.Job) string { return j.Namespace + "/" + j.Name }

// addPod observes a pod creation for its job's expectations.
func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// A restarted controller may first see a pod already being deleted:
		// that is no creation to observe.
		c.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil {
			c.expectations.CreationObserved(jobKey(job))
			c.enqueueJobBatched(job)
		}
		return
	}
	if hasTrackingFinalizer(pod) {
		c.orphanQueue.Add(controller.PodKey(pod))
	}
	for _, job := range c.podJobs(pod) {
		c.enqueueJobBatched(job)
	}
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		// Deletion started: count it now, the job may replace the pod.
		c.deletePod(curPod, false)
		return
	}
	removed := !hasTrackingFinalizer(curPod)
	curRef := metav1.GetControllerOfNoCopy(curPod)
	oldRef := metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.resolveControllerRef(oldPod.Namespace, oldRef); job != nil {
			if removed {
				c.finalizers.observed(jobKey(job), string(curPod.UID))
			}
			c.enqueueJobBatched(job)
		}
	}
	if curRef != nil {
		if job := c.resolveControllerRef(curPod.Namespace, curRef); job != nil {
			if removed {
				c.finalizers.observed(jobKey(job), string(curPod.UID))
			}
			c.enqueueJobBatched(job)
		}
		return
	}
	if hasTrackingFinalizer(curPod) {
		c.orphanQueue.Add(controller.PodKey(curPod))
	}
	if refChanged || !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
		for _, job := range c.podJobs(curPod) {
			c.enqueueJobBatched(job)
		}
	}
}

// deletePod observes a deletion (final: the pod is gone; otherwise it got
// its deletionTimestamp).
func (c *Controller) deletePod(obj any, final bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	var job *batchv1.Job
	if ref != nil {
		job = c.resolveControllerRef(pod.Namespace, ref)
	}
	if job == nil {
		if hasTrackingFinalizer(pod) && !final {
			c.orphanQueue.Add(controller.PodKey(pod))
		}
		return
	}
	key := jobKey(job)
	c.expectations.DeletionObserved(key, controller.PodKey(pod))
	if final || !hasTrackingFinalizer(pod) {
		c.finalizers.observed(key, string(pod.UID))
	}
	c.enqueueJobBatched(job)
}

// syncOrphanPod removes the tracking finalizer of a pod whose job no
// longer counts it: no controller, or a job that is gone or finished.
func (c *Controller) syncOrphanPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil && !finished(job) {
			return nil // its job will count it
		}
	}
	if err := c.podControl.PatchPod(ctx, ns, name, removeFinalizerPatch()); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing tracking finalizer of orphan pod %s: %w", key, err)
	}
	return nil
}

// removeFinalizerPatch is the strategic merge patch dropping the tracking
// finalizer.
func removeFinalizerPatch() []byte {
	return []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + batchv1.JobTrackingFinalizer + `"]}}`)
}
