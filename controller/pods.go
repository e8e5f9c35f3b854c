package controller

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodDeletionCostAnnotation lets users rank the pods of a ReplicaSet for
// deletion: lower costs are deleted first (Kubernetes' annotation).
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// IsPodActive reports whether p still counts towards its controller: not
// Succeeded, not Failed and not being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// FilterActivePods returns the active pods of pods (see IsPodActive).
func FilterActivePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// PodReadyCondition returns p's Ready condition, or nil.
func PodReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether p's Ready condition is True.
func IsPodReady(p *corev1.Pod) bool {
	c := PodReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether p has been ready for more than
// minReadySeconds at now (ready is enough when minReadySeconds is 0).
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// AvailableIn returns how long after now p becomes available under
// minReadySeconds, and false if it is not ready (or already available:
// then the duration is 0 and ok is true). Controllers requeue after it.
func AvailableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) (time.Duration, bool) {
	c := PodReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return 0, false
	}
	if minReadySeconds == 0 || c.LastTransitionTime.IsZero() {
		return 0, true
	}
	d := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if d < 0 {
		return 0, true
	}
	// Available means strictly after the deadline.
	return d + time.Millisecond, true
}

// PodKey is the namespace/name key of p.
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// PodKeys returns the keys of pods.
func PodKeys(pods []*corev1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = PodKey(p)
	}
	return keys
}

// RankPodsForDeletion sorts pods so that those to delete first come first,
// with Kubernetes' rules applied in turn until one decides:
//
//  1. not yet scheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower controller.kubernetes.io/pod-deletion-cost first;
//  5. more active related pods on the same node first ("doubled up");
//     related are the pods of the whole owner family (all ReplicaSets of a
//     Deployment), ranks[i] = count on pods[i]'s node;
//  6. both ready: ready more recently first;
//  7. higher maximum container restart count first;
//  8. created more recently first.
//
// Times in 6 and 8 are compared in log2 buckets of their age at now (so
// pods of similar age fall together and are ordered by UID, spreading
// deletions pseudo-randomly); a zero now compares exact times.
func RankPodsForDeletion(pods, related []*corev1.Pod, now time.Time) {
	onNode := map[string]int{}
	for _, p := range related {
		if IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranks := make(map[*corev1.Pod]int, len(pods))
	for _, p := range pods {
		ranks[p] = onNode[p.Spec.NodeName]
	}
	sort.SliceStable(pods, func(i, j int) bool {
		return deleteBefore(pods[i], pods[j], ranks[pods[i]], ranks[pods[j]], now)
	})
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// deleteBefore reports whether a should be deleted before b.
func deleteBefore(a, b *corev1.Pod, rankA, rankB int, now time.Time) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	readyA, readyB := IsPodReady(a), IsPodReady(b)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if rankA != rankB {
		return rankA > rankB
	}
	if readyA && readyB {
		ta, tb := PodReadyCondition(a).LastTransitionTime.Time, PodReadyCondition(b).LastTransitionTime.Time
		if !ta.Equal(tb) {
			if r, decided := newerFirst(a, b, ta, tb, now); decided {
				return r
			}
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		if r, decided := newerFirst(a, b, ta, tb, now); decided {
			return r
		}
	}
	return false
}

// newerFirst orders a before b when ta is more recent (a zero time first),
// comparing log2 age buckets when now is set; same bucket falls back to UID.
func newerFirst(a, b *corev1.Pod, ta, tb, now time.Time) (bool, bool) {
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero(), true
	}
	if now.IsZero() {
		return ta.After(tb), true
	}
	ba, bb := ageBucket(now.Sub(ta)), ageBucket(now.Sub(tb))
	if ba == bb {
		return a.UID < b.UID, true
	}
	return ba < bb, true
}

func ageBucket(d time.Duration) int64 {
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, c := range p.Status.ContainerStatuses {
		m = max(m, c.RestartCount)
	}
	return m
}
