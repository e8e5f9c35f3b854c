package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/controller"
)

// rolloutRecreate scales every old ReplicaSet to zero, waits until none of
// their pods is left running (terminating ones included), and only then
// creates and scales up the new ReplicaSet: never both templates at once.
func (dc *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	// Do not create the new ReplicaSet yet: it would scale up at once.
	newRS, old, err := dc.replicaSetsAndRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledDown := false
	for _, rs := range activeReplicaSets(old) {
		scaled, _, err := dc.scaleReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown || dc.oldPodsRunning(newRS, old) {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = dc.replicaSetsAndRevision(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	}
	if _, _, err := dc.scaleReplicaSet(ctx, newRS, desired(d), d); err != nil {
		return err
	}
	if DeploymentComplete(d, &d.Status) {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning reports whether old ReplicaSets still have pods that are
// not finished (Succeeded or Failed), counting terminating ones.
func (dc *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) bool {
	if replicas, _, _ := statusSums(old); replicas > 0 {
		return true
	}
	for _, rs := range old {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		objs, err := dc.podIndexer.ByIndex(controller.ControllerUIDIndex, string(rs.UID))
		if err != nil {
			return true
		}
		for _, o := range objs {
			switch o.(*corev1.Pod).Status.Phase {
			case corev1.PodSucceeded, corev1.PodFailed:
			default:
				return true
			}
		}
	}
	return false
}
