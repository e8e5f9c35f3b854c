package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// rolloutRolling advances a RollingUpdate one step: grow the new
// ReplicaSet within maxSurge, else shrink old ones within maxUnavailable,
// then record progress. Each step returns and waits for the ReplicaSet
// controller's status (a watch event) before the next.
func (dc *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.replicaSetsAndRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledUp, err := dc.reconcileNewReplicaSet(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	scaledDown, err := dc.reconcileOldReplicaSets(ctx, all, activeReplicaSets(old), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	if DeploymentComplete(d, &d.Status) {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, all, newRS, d)
}

// reconcileNewReplicaSet grows (or trims) the new ReplicaSet.
func (dc *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if specReplicas(newRS) == desired(d) {
		return false, nil
	}
	if specReplicas(newRS) > desired(d) {
		scaled, _, err := dc.scaleReplicaSet(ctx, newRS, desired(d), d)
		return scaled, err
	}
	n, err := NewRSNewReplicas(d, all, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := dc.scaleReplicaSet(ctx, newRS, n, d)
	return scaled, err
}

// MaxScaledDown is how many old replicas a rolling update may remove now:
// all replicas minus the minimum available minus the new ReplicaSet's
// replicas that are not available yet.
func MaxScaledDown(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := desired(d) - MaxUnavailable(d)
	newUnavailable := specReplicas(newRS) - newRS.Status.AvailableReplicas
	return replicaSum(all) - minAvailable - newUnavailable
}

// reconcileOldReplicaSets shrinks old ReplicaSets: first by their
// unavailable replicas (removing those costs no availability and unblocks
// a rollout stuck behind broken pods), then by what availability allows.
func (dc *Controller) reconcileOldReplicaSets(ctx context.Context, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if replicaSum(old) == 0 {
		return false, nil
	}
	maxDown := MaxScaledDown(d, all, newRS)
	if maxDown <= 0 {
		return false, nil
	}
	old, cleaned, err := dc.cleanupUnhealthyReplicas(ctx, old, d, maxDown)
	if err != nil {
		return false, err
	}
	all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	down, err := dc.scaleDownOldForRollingUpdate(ctx, all, old, d)
	if err != nil {
		return false, err
	}
	return cleaned+down > 0, nil
}

// cleanupUnhealthyReplicas scales old ReplicaSets down by their
// unavailable replicas, oldest first, at most maxCleanup in all. The
// ReplicaSet controller deletes unavailable pods first, so this removes
// exactly the broken ones.
func (dc *Controller) cleanupUnhealthyReplicas(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) ([]*appsv1.ReplicaSet, int32, error) {
	sort.SliceStable(old, byCreation(old))
	var total int32
	for i, rs := range old {
		if total >= maxCleanup {
			break
		}
		if specReplicas(rs) == 0 || specReplicas(rs) <= rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxCleanup-total, specReplicas(rs)-rs.Status.AvailableReplicas)
		_, updated, err := dc.scaleReplicaSet(ctx, rs, specReplicas(rs)-n, d)
		if err != nil {
			return nil, total, err
		}
		total += n
		old[i] = updated
	}
	return old, total, nil
}

// scaleDownOldForRollingUpdate removes old replicas, oldest ReplicaSet
// first, as long as the available replicas stay at spec.replicas minus
// maxUnavailable. Availability is counted per ReplicaSet at most at its
// spec.replicas (safeAvailable): stricter than Kubernetes, which trusts a
// just-scaled-down ReplicaSet's stale status.
func (dc *Controller) scaleDownOldForRollingUpdate(ctx context.Context, all, old []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := desired(d) - MaxUnavailable(d)
	available := safeAvailable(all)
	if available <= minAvailable {
		return 0, nil
	}
	sort.SliceStable(old, byCreation(old))
	want := available - minAvailable
	var total int32
	for _, rs := range old {
		if total >= want {
			break
		}
		if specReplicas(rs) == 0 {
			continue
		}
		n := min(specReplicas(rs), want-total)
		size := specReplicas(rs) - n
		if size > specReplicas(rs) {
			return total, fmt.Errorf("invalid scale down of replicaset %s/%s: %d -> %d", rs.Namespace, rs.Name, specReplicas(rs), size)
		}
		if _, _, err := dc.scaleReplicaSet(ctx, rs, size, d); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
