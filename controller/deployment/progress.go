package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// calculateStatus derives the Deployment's status from its ReplicaSets:
// counts summed from their statuses (updated = the new ReplicaSet's), and
// the Available condition (at least spec.replicas - maxUnavailable
// available). Other conditions are carried over.
func calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	replicas, ready, available := statusSums(all)
	unavailable := max(replicaSum(all)-available, 0)
	updated, _, _ := statusSums([]*appsv1.ReplicaSet{newRS})
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            replicas,
		UpdatedReplicas:     updated,
		ReadyReplicas:       ready,
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	if available >= desired(d)-MaxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, eventMessageMinimumAvailable, now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable, eventMessageMinimumNotAvailable, now))
	}
	return st
}

// rolloutStatus is calculateStatus plus the Progressing condition of a
// rollout: NewReplicaSetAvailable once complete, ReplicaSetUpdated
// (refreshing its update time) whenever there is progress, and
// ProgressDeadlineExceeded when progressDeadlineSeconds passed without any;
// plus the ReplicaFailure condition of the ReplicaSets.
func rolloutStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	st := calculateStatus(all, newRS, d, now)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := GetCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !complete {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case DeploymentComplete(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable,
				subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &st):
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, subject+" is progressing.", now)
			// Progress refreshes the update time even with the same reason.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, c)
		case deploymentTimedOut(d, &st, now):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded,
				subject+" has timed out progressing.", now))
		}
	}
	if failure := replicaFailure(all, newRS); failure != nil {
		setCondition(&st, *failure)
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	return st
}

// replicaFailure returns the ReplicaFailure of the new ReplicaSet, else of
// any ReplicaSet, as a Deployment condition.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rss := range [][]*appsv1.ReplicaSet{{newRS}, all} {
		for _, rs := range rss {
			if rs == nil {
				continue
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					dc := replicaSetFailure(c)
					return &dc
				}
			}
		}
	}
	return nil
}

// syncRolloutStatus writes the rollout status, or, when nothing changed,
// schedules the progress-deadline check.
func (dc *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	now := dc.ctx.Clock.Now()
	st := rolloutStatus(all, newRS, d, now)
	if equality.Semantic.DeepEqual(d.Status, st) {
		if after := requeueForProgress(d, st, now); after >= 0 {
			dc.enqueueAfter(d, after)
		}
		return nil
	}
	d.Status = st
	return dc.updateStatus(ctx, d)
}

// requeueForProgress returns when the Deployment must be looked at again to
// notice a missed progress deadline (nothing else would wake it), or -1.
func requeueForProgress(d *appsv1.Deployment, st appsv1.DeploymentStatus, now time.Time) time.Duration {
	cur := GetCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil {
		return -1
	}
	if DeploymentComplete(d, &st) || cur.Reason == ReasonProgressDeadlineExceeded {
		return -1
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		return time.Second
	}
	// A deadline is missed once strictly past, and times are stored in
	// whole seconds: look one second later.
	return after + time.Second
}
