package fieldmanager

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// stamp replaces the times the merge library gave the entries this
// operation touched (it reads the wall clock itself) with the Manager's
// clock, in UTC and truncated to the second as the API serializes them, so
// that stored and returned objects agree and tests can pin the time. An
// entry counts as touched when its time falls within [start, end], the
// library call, and no entry of the input carried that very time.
func (m *Manager) stamp(obj runtime.Object, before []metav1.ManagedFieldsEntry, start, end time.Time) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	entries := a.GetManagedFields()
	if len(entries) == 0 {
		return
	}
	lo, hi := start.Truncate(0), end.Truncate(0) // wall clock only
	var now *metav1.Time
	changed := false
	for i := range entries {
		t := entries[i].Time
		if t == nil || t.Time.Before(lo) || t.Time.After(hi) || hadTime(before, t) {
			continue
		}
		if now == nil {
			now = &metav1.Time{Time: m.now().UTC().Truncate(time.Second)}
		}
		entries[i].Time = now.DeepCopy()
		changed = true
	}
	if changed {
		a.SetManagedFields(entries)
	}
}

func hadTime(entries []metav1.ManagedFieldsEntry, t *metav1.Time) bool {
	for _, e := range entries {
		if e.Time != nil && e.Time.Equal(t) {
			return true
		}
	}
	return false
}

// IgnoreTimestampOnlyChanges undoes a write's managedFields timestamp
// updates when they are its only change: if newObj and oldObj are equal
// except for the times of their (pairwise equal) managedFields entries,
// newObj gets oldObj's times back. kube-apiserver does this right after
// the strategy's PrepareForUpdate, so that a write which changes nothing
// (an apply of the same values, a status write reset by the strategy)
// does not bump the resourceVersion just for a timestamp. It reports
// whether it restored anything.
func IgnoreTimestampOnlyChanges(newObj, oldObj runtime.Object) bool {
	return ignoreTimestampOnlyChanges(newObj, oldObj, equality.Semantic.DeepEqual)
}

// IgnoreTimestampOnlyChanges is the package's IgnoreTimestampOnlyChanges
// with the Manager's semantic.Comparer: the same answer, found without
// walking the whole object when the write changed something.
func (m *Manager) IgnoreTimestampOnlyChanges(newObj, oldObj runtime.Object) bool {
	return ignoreTimestampOnlyChanges(newObj, oldObj, m.same.Equal)
}

// Equal reports equality.Semantic.DeepEqual(a, b), through the Manager's
// semantic.Comparer.
func (m *Manager) Equal(a, b runtime.Object) bool { return m.same.Equal(a, b) }

func ignoreTimestampOnlyChanges(newObj, oldObj runtime.Object, equal func(a, b any) bool) bool {
	na, err1 := meta.Accessor(newObj)
	oa, err2 := meta.Accessor(oldObj)
	if err1 != nil || err2 != nil {
		return false
	}
	nf, of := na.GetManagedFields(), oa.GetManagedFields()
	if len(nf) == 0 || len(nf) != len(of) {
		return false
	}
	timesDiffer := false
	for i := range nf {
		if !nf[i].Time.Equal(of[i].Time) {
			timesDiffer = true
		}
		a, b := nf[i], of[i]
		a.Time, b.Time = nil, nil
		if !equality.Semantic.DeepEqual(a, b) {
			return false
		}
	}
	if !timesDiffer {
		return false
	}
	restored := make([]metav1.ManagedFieldsEntry, len(nf))
	copy(restored, nf)
	for i := range restored {
		restored[i].Time = of[i].Time.DeepCopy()
	}
	na.SetManagedFields(restored)
	if equal(newObj, oldObj) {
		return true
	}
	na.SetManagedFields(nf)
	return false
}
