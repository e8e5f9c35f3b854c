package deployment

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Annotations the Deployment controller writes (Kubernetes' names; kubectl
// rollout history and undo read them).
const (
	// RevisionAnnotation numbers the pod templates of a Deployment: its
	// ReplicaSets carry the revision they were (last) rolled out as, the
	// Deployment the current one.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists earlier revisions a ReplicaSet had
	// when a rollback made it current again.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's spec.replicas as the
	// ReplicaSet last saw it (a difference means a scaling event).
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas+maxSurge as the ReplicaSet
	// last saw it (the base of proportional scaling).
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// RollbackToAnnotation is the in-server rollback request of the old
	// extensions/v1beta1 and apps/v1beta1 rollback subresource; kubectl
	// now rolls back client-side, but a request is still honoured.
	RollbackToAnnotation = "deprecated.deployment.rollback.to"
	// ChangeCauseAnnotation is what kubectl rollout history shows; copied
	// from the Deployment to its new ReplicaSet like every annotation.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
)

// maxRevisionHistoryChars bounds the revision-history annotation.
const maxRevisionHistoryChars = 2000

// skipCopy names the Deployment annotations not copied to ReplicaSets.
func skipCopy(key string) bool {
	switch key {
	case corev1.LastAppliedConfigAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, RollbackToAnnotation:
		return true
	}
	return false
}

// copyAnnotations copies the Deployment's annotations to rs (except the
// controller's own and kubectl's last-applied); existing ones on rs that
// the Deployment lacks are kept. It reports a change.
func copyAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if skipCopy(k) || rs.Annotations[k] == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// SetNewReplicaSetAnnotations brings the new ReplicaSet's annotations up to
// date: the Deployment's annotations, the revision newRevision if it is
// higher than rs's (keeping the revision rs had in its revision history:
// it was rolled back to), and for a ReplicaSet about to be created the
// replica annotations. It reports a change.
func SetNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyAnnotations(d, rs)
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldN, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false // not ours to fix
		}
		oldN = 0
	}
	newN, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldN < newN {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			rs.Annotations[RevisionHistoryAnnotation] = appendHistory(rs.Annotations[RevisionHistoryAnnotation], oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, desired(d), desired(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

// appendHistory adds rev to a comma-separated history, dropping the oldest
// entries beyond maxRevisionHistoryChars.
func appendHistory(history, rev string) string {
	if history == "" {
		return rev
	}
	entries := append(strings.Split(history, ","), rev)
	total := len(history) + 1 + len(rev)
	for total > maxRevisionHistoryChars && len(entries) > 1 {
		total -= len(entries[0]) + 1
		entries = entries[1:]
	}
	return strings.Join(entries, ",")
}

// setReplicasAnnotations sets the desired- and max-replicas annotations.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desiredReplicas)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desiredReplicas)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

func int32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

func desiredReplicasAnnotation(rs *appsv1.ReplicaSet) (int32, bool) {
	return int32Annotation(rs, DesiredReplicasAnnotation)
}

func maxReplicasAnnotation(rs *appsv1.ReplicaSet) (int32, bool) {
	return int32Annotation(rs, MaxReplicasAnnotation)
}

// setAnnotationsFrom makes the Deployment's annotations those of the
// ReplicaSet it is rolled back to (its change-cause in particular), keeping
// the Deployment's own controller and kubectl annotations.
func setAnnotationsFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if skipCopy(k) {
			kept[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !skipCopy(k) {
			kept[k] = v
		}
	}
	d.Annotations = kept
}
