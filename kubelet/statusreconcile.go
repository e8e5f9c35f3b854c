package kubelet

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
)

// reconcile re-sends a pod's status when the API's copy no longer holds
// what the kubelet wrote: another writer changed a field the kubelet owns
// — the node lifecycle controller marks a node's pods Ready=False while
// its lease has lapsed, and only the kubelet sets them Ready again. Like
// Kubernetes' status manager, which compares the API's status with its
// own, it looks at every update of the pod from the informer. Events
// older than the kubelet's own last write are skipped: they reflect a
// state the kubelet has already replaced.
func (m *statusManager) reconcile(api *corev1.Pod) {
	m.mu.Lock()
	e := m.desired[api.UID]
	if e == nil || e.written != e.version {
		m.mu.Unlock()
		return // nothing written yet, or a write is pending anyway
	}
	if e.last != nil && e.last.UID == api.UID && !newerThan(api.ResourceVersion, e.last.ResourceVersion) {
		m.mu.Unlock()
		return
	}
	merged := status.Merge(api.Status, e.status, m.k.clock.Now())
	if !status.NeedsUpdate(api.Status, merged) {
		m.mu.Unlock()
		return
	}
	e.written, e.last = 0, nil // write again, starting from the API's copy
	m.mu.Unlock()
	m.queue.Add(api.UID)
}

// newerThan reports whether resourceVersion a is newer than b. podkit's
// stores number their revisions, so numeric versions compare as numbers;
// anything else counts as newer unless equal (the write that follows
// then meets a conflict and rereads, never a lost update).
func newerThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}
