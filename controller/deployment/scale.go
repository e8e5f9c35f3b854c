package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// syncScale handles a paused Deployment or a scaling event: resize the
// ReplicaSets without rolling, clean up history while paused, write status.
func (dc *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.replicaSetsAndRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := dc.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused && rollbackTo(d) == nil {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncStatus(ctx, append(old, newRS), newRS, d)
}

// scale resizes the Deployment's ReplicaSets to spec.replicas. With one
// active ReplicaSet (or none) it takes the whole size; a saturated new one
// makes the old ones go to zero; during a rolling update the difference is
// spread over the active ReplicaSets in proportion to their sizes
// (larger first; ties: newer first up, older first down), the rounding
// leftover going to the largest. Scaling proportionally rather than only
// the new or only the old ReplicaSet keeps the rollout's ratio of old to
// new pods, so a bad new template does not gain weight by a resize.
func (dc *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if target := findActiveOrLatest(newRS, old); target != nil {
		if specReplicas(target) == desired(d) {
			return nil
		}
		_, _, err := dc.scaleReplicaSet(ctx, target, desired(d), d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range activeReplicaSets(old) {
			if _, _, err := dc.scaleReplicaSet(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	active := activeReplicaSets(append(append([]*appsv1.ReplicaSet(nil), old...), newRS))
	sizes := ProportionalSizes(d, active)
	for _, rs := range active {
		if _, _, err := dc.scaleReplicaSet(ctx, rs, sizes[rs.Name], d); err != nil {
			return err
		}
	}
	return nil
}

// ProportionalSizes computes the new spec.replicas of each active
// ReplicaSet (by name) when a rolling Deployment is resized mid-rollout.
// It sorts active in place.
func ProportionalSizes(d *appsv1.Deployment, active []*appsv1.ReplicaSet) map[string]int32 {
	// The ReplicaSets may together run up to spec.replicas+maxSurge.
	var allowed int32
	if desired(d) > 0 {
		allowed = desired(d) + MaxSurge(d)
	}
	toAdd := allowed - replicaSum(active)
	switch {
	case toAdd > 0:
		sortBySizeNewer(active)
	case toAdd < 0:
		sortBySizeOlder(active)
	}
	sizes := make(map[string]int32, len(active))
	var added int32
	for _, rs := range active {
		if toAdd == 0 {
			sizes[rs.Name] = specReplicas(rs)
			continue
		}
		p := GetProportion(rs, d, toAdd, added)
		sizes[rs.Name] = specReplicas(rs) + p
		added += p
	}
	if toAdd != 0 && len(active) > 0 {
		first := active[0].Name
		sizes[first] = max(sizes[first]+toAdd-added, 0)
	}
	return sizes
}

// scaleReplicaSet sets rs's size (and its replica annotations) and records
// the ScalingReplicaSet event Kubernetes records.
func (dc *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := specReplicas(rs) != size
	maxReplicas := desired(d) + MaxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired(d), maxReplicas) {
		return false, rs, nil
	}
	before := specReplicas(rs)
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &size
	setReplicasAnnotations(cp, desired(d), maxReplicas)
	client := dc.ctx.Client.AppsV1().ReplicaSets(cp.Namespace)
	updated, err := client.Update(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// Usually the ReplicaSet controller wrote a status since our cache
		// saw it. If the spec is still what the decision was based on,
		// apply the decision there: a multi-ReplicaSet resize interrupted
		// half-way would otherwise be recomputed from a mixed state.
		fresh, gerr := client.Get(ctx, rs.Name, metav1.GetOptions{})
		if gerr == nil && fresh.UID == rs.UID && fresh.Generation == rs.Generation {
			fresh.Spec.Replicas = &size
			setReplicasAnnotations(fresh, desired(d), maxReplicas)
			updated, err = client.Update(ctx, fresh, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return false, rs, fmt.Errorf("scaling replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, size, err)
	}
	if sizeChanged {
		op := "up"
		if size < before {
			op = "down"
		}
		dc.recorder.Eventf(d, corev1.EventTypeNormal, EventScalingReplicaSet, "Scaled %s replica set %s from %d to %d", op, rs.Name, before, size)
	}
	return sizeChanged, updated, nil
}

// cleanup deletes the oldest old ReplicaSets beyond revisionHistoryLimit,
// only those fully scaled down and observed so (never one with pods).
func (dc *Controller) cleanup(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	excess := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if excess <= 0 {
		return nil
	}
	SortByRevision(alive)
	for _, rs := range alive[:excess] {
		if rs.Status.Replicas != 0 || specReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := dc.ctx.Client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &rs.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// SortByRevision orders ReplicaSets by revision, oldest first (creation
// time breaks ties and orders unparsable revisions).
func SortByRevision(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		ri, err1 := Revision(rss[i])
		rj, err2 := Revision(rss[j])
		if err1 != nil || err2 != nil || ri == rj {
			return byCreation(rss)(i, j)
		}
		return ri < rj
	})
}
