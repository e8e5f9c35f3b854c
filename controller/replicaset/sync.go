package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podkit/podkit/controller"
)

// sync converges the ReplicaSet with key: claim pods, create or delete the
// difference (when the cache has caught up with the last round), and write
// the status.
func (rc *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never becomes valid
	}
	rs, err := rc.rsLister.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		rc.expectations.Delete(key)
		rc.written.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading replicaset %s: %w", key, err)
	}
	rs = rc.written.fresh(key, rs)
	needsSync := rc.expectations.Satisfied(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Invalid selectors are refused by validation; nothing to retry.
		rc.log.Error("invalid selector", "replicaset", key, "err", err)
		return nil
	}
	candidates, err := controller.ByControllerUID[*corev1.Pod](rc.podIndexer, string(rs.UID), rs.Namespace)
	if err != nil {
		return err
	}
	rm := &controller.RefManager{
		Controller: rs, Kind: Kind, Selector: selector,
		CanAdopt: controller.RecheckDeletionTimestamp(controller.FreshUID(rs.UID, func(ctx context.Context) (metav1.Object, error) {
			return rc.ctx.Client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		})),
	}
	pods, err := rm.ClaimPods(ctx, rc.ctx.Client, controller.FilterActivePods(candidates))
	if err != nil {
		return fmt.Errorf("claiming pods of replicaset %s: %w", key, err)
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = rc.manageReplicas(ctx, pods, rs, key)
	}
	from := rs
	rs = rs.DeepCopy()
	status := calculateStatus(rs, pods, manageErr, rc.ctx.Clock.Now())
	updated, err := rc.updateStatus(ctx, rs, status)
	if err != nil {
		return err
	}
	if updated != rs {
		rc.written.record(key, from, updated)
	}
	if manageErr != nil {
		return manageErr
	}
	// Ready but not yet available: look again when minReadySeconds passed.
	if updated.Spec.MinReadySeconds > 0 && updated.Status.ReadyReplicas == replicas(updated) &&
		updated.Status.AvailableReplicas != replicas(updated) {
		if d := nextAvailable(pods, updated.Spec.MinReadySeconds, rc.ctx.Clock.Now()); d > 0 {
			return controller.RequeueAfter(d)
		}
	}
	return nil
}

// nextAvailable is the wait until the next ready pod becomes available.
func nextAvailable(pods []*corev1.Pod, minReady int32, now time.Time) time.Duration {
	var next time.Duration
	for _, p := range pods {
		if d, ok := controller.AvailableIn(p, minReady, now); ok && d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// manageReplicas creates or deletes pods so that len(pods) approaches the
// desired count, at most burst per sync, recording expectations first.
func (rc *Controller) manageReplicas(ctx context.Context, pods []*corev1.Pod, rs *appsv1.ReplicaSet, key string) error {
	diff := len(pods) - int(replicas(rs))
	switch {
	case diff < 0:
		n := min(-diff, rc.burst)
		// Expect before creating: the watch events may arrive before the
		// create calls return.
		rc.expectations.ExpectCreations(key, n)
		ref := controller.OwnerRef(rs, Kind)
		created, err := controller.SlowStartBatch(n, controller.SlowStartInitialBatch, func() error {
			_, err := rc.podControl.CreatePod(ctx, rs.Namespace, &rs.Spec.Template, rs, ref, "")
			if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // the namespace is going away; nothing to report
			}
			return err
		})
		// Pods never created will never be observed.
		if skipped := n - created; skipped > 0 {
			rc.expectations.Lower(key, skipped, 0)
			rc.log.Debug("slow-start failure, skipping pod creations", "replicaset", key, "skipped", skipped, "err", err)
		}
		return err
	case diff > 0:
		n := min(diff, rc.burst)
		victims := rc.podsToDelete(pods, rc.relatedPods(rs), n)
		rc.expectations.ExpectDeletions(key, controller.PodKeys(victims))
		var wg sync.WaitGroup
		errs := make([]error, len(victims))
		for i, p := range victims {
			wg.Go(func() {
				if err := rc.podControl.DeletePod(ctx, rs.Namespace, p.Name, rs); err != nil {
					// No watch event will come for a failed delete.
					rc.expectations.DeletionObserved(key, controller.PodKey(p))
					if !apierrors.IsNotFound(err) {
						errs[i] = err
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	return nil
}

// podsToDelete picks the n pods to delete first (controller.RankPodsForDeletion).
func (rc *Controller) podsToDelete(pods, related []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	ranked := append([]*corev1.Pod(nil), pods...)
	controller.RankPodsForDeletion(ranked, related, rc.ctx.Clock.Now())
	return ranked[:n]
}

// relatedPods returns the pods of every ReplicaSet that shares rs's
// controller (the Deployment's whole family), or rs's own pods.
func (rc *Controller) relatedPods(rs *appsv1.ReplicaSet) []*corev1.Pod {
	owners := []string{string(rs.UID)}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		siblings, err := rc.rsIndexer.ByIndex(controller.ControllerUIDIndex, string(ref.UID))
		if err == nil {
			owners = owners[:0]
			for _, o := range siblings {
				owners = append(owners, string(o.(*appsv1.ReplicaSet).UID))
			}
		}
	}
	var out []*corev1.Pod
	for _, uid := range owners {
		objs, err := rc.podIndexer.ByIndex(controller.ControllerUIDIndex, uid)
		if err != nil {
			continue
		}
		for _, o := range objs {
			out = append(out, o.(*corev1.Pod))
		}
	}
	return out
}
