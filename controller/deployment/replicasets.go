package deployment

import (
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
)

func specReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil {
		return 0
	}
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// replicaSum is the total spec.replicas of rss (nil entries skipped).
func replicaSum(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += specReplicas(rs)
	}
	return n
}

// statusSums adds up the status counts of rss.
func statusSums(rss []*appsv1.ReplicaSet) (replicas, ready, available int32) {
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		replicas += rs.Status.Replicas
		ready += rs.Status.ReadyReplicas
		available += rs.Status.AvailableReplicas
	}
	return replicas, ready, available
}

// safeAvailable is the available replicas of rss counting each ReplicaSet
// at most at its spec.replicas: a ReplicaSet just scaled down still reports
// the pods it is about to delete, and counting them could let a rolling
// update scale down twice for the same pods.
func safeAvailable(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		n += min(rs.Status.AvailableReplicas, specReplicas(rs))
	}
	return n
}

// activeReplicaSets keeps the ReplicaSets with spec.replicas > 0.
func activeReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && specReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// byCreation orders oldest first, then by name.
func byCreation(rss []*appsv1.ReplicaSet) func(i, j int) bool {
	return func(i, j int) bool {
		a, b := rss[i], rss[j]
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
}

// sortBySizeNewer orders larger first, same size newest first (who grows
// first when scaling up).
func sortBySizeNewer(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		if si, sj := specReplicas(rss[i]), specReplicas(rss[j]); si != sj {
			return si > sj
		}
		return byCreation(rss)(j, i)
	})
}

// sortBySizeOlder orders larger first, same size oldest first (who shrinks
// first when scaling down).
func sortBySizeOlder(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		if si, sj := specReplicas(rss[i]), specReplicas(rss[j]); si != sj {
			return si > sj
		}
		return byCreation(rss)(i, j)
	})
}

// Revision parses the revision annotation of rs (0 when absent).
func Revision(rs *appsv1.ReplicaSet) (int64, error) {
	v, ok := rs.Annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among rss.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		if v, err := Revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

// lastRevision is the second highest revision among rss: the one a
// rollback without a revision returns to.
func lastRevision(rss []*appsv1.ReplicaSet) int64 {
	var top, second int64
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		v, err := Revision(rs)
		if err != nil {
			continue
		}
		switch {
		case v >= top:
			second, top = top, v
		case v > second:
			second = v
		}
	}
	return second
}

// FindNewReplicaSet returns the ReplicaSet whose template equals the
// Deployment's (ignoring the hash label), the oldest if several do.
func FindNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := append([]*appsv1.ReplicaSet(nil), rss...)
	sort.SliceStable(sorted, byCreation(sorted))
	for _, rs := range sorted {
		if EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// FindOldReplicaSets returns every ReplicaSet but the new one.
func FindOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := FindNewReplicaSet(d, rss)
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		old = append(old, rs)
	}
	return old
}

// findActiveOrLatest returns the only ReplicaSet with replicas, or the
// newest one when none has any, or nil when several have (a rollout is
// in progress).
func findActiveOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	sorted := append([]*appsv1.ReplicaSet(nil), old...)
	sort.SliceStable(sorted, func(i, j int) bool { return byCreation(sorted)(j, i) })
	active := activeReplicaSets(append(sorted, newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return sorted[0]
	case 1:
		return active[0]
	}
	return nil
}

// isSaturated reports whether rs already runs the Deployment's full size,
// all available, under the current desired size.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	want, ok := desiredReplicasAnnotation(rs)
	return ok && want == desired(d) && specReplicas(rs) == desired(d) && rs.Status.AvailableReplicas == desired(d)
}
