package endpointslice

import (
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/controller"
)

// sliceTracker remembers the EndpointSlices the controller wrote, by UID,
// with the resourceVersion of its write (or that it deleted them), so a
// sync can tell that the informer cache has not caught up with its own
// writes yet — acting on such a cache would create duplicate slices. It is
// Kubernetes' EndpointSliceTracker keyed on resourceVersion rather than
// generation, because EndpointSlices have no spec and so no generation
// bumps on update.
type sliceTracker struct {
	mu     sync.Mutex
	bySvc  map[types.NamespacedName]map[types.UID]written
	svcUID map[types.NamespacedName]types.UID
}

type written struct {
	rv      uint64
	deleted bool
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{bySvc: map[types.NamespacedName]map[types.UID]written{}, svcUID: map[types.NamespacedName]types.UID{}}
}

func serviceOf(es *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[discoveryv1.LabelServiceName]}
}

// rvOf parses a resourceVersion; 0 when it is not a number (the tracker
// then never considers the cache stale for it).
func rvOf(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func (t *sliceTracker) record(es *discoveryv1.EndpointSlice, w written) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := serviceOf(es)
	m := t.bySvc[nn]
	if m == nil {
		m = map[types.UID]written{}
		t.bySvc[nn] = m
	}
	m[es.UID] = w
}

// wrote records a created or updated slice as the API server returned it.
func (t *sliceTracker) wrote(es *discoveryv1.EndpointSlice) {
	t.record(es, written{rv: rvOf(es.ResourceVersion)})
}

// deleting records a slice the controller deleted.
func (t *sliceTracker) deleting(es *discoveryv1.EndpointSlice) { t.record(es, written{deleted: true}) }

// ours reports whether es is exactly the version the controller wrote, so
// its watch event needs no sync.
func (t *sliceTracker) ours(es *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.bySvc[serviceOf(es)][es.UID]
	return ok && !w.deleted && w.rv != 0 && w.rv == rvOf(es.ResourceVersion)
}

// deleted forgets a deleted slice and reports whether the controller
// deleted it (an unexpected deletion needs a sync to restore the slice).
func (t *sliceTracker) deleted(es *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.bySvc[serviceOf(es)]
	w, ok := m[es.UID]
	delete(m, es.UID)
	return ok && w.deleted
}

// stale reports whether the cached slices of svc lag behind the
// controller's writes: a slice older than written, a slice it deleted
// still there, or a slice it created not there yet. A Service recreated
// under the same name (new UID) drops what was tracked for the old one.
func (t *sliceTracker) stale(svc *corev1.Service, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	if uid, ok := t.svcUID[nn]; ok && uid != svc.UID {
		delete(t.bySvc, nn)
	}
	t.svcUID[nn] = svc.UID
	m := t.bySvc[nn]
	if len(m) == 0 {
		return false
	}
	seen := make(map[types.UID]bool, len(cached))
	for _, es := range cached {
		seen[es.UID] = true
		if w, ok := m[es.UID]; ok && (w.deleted || rvOf(es.ResourceVersion) < w.rv) {
			return true
		}
	}
	for uid, w := range m {
		if !w.deleted && !seen[uid] {
			return true
		}
	}
	return false
}

func (t *sliceTracker) forget(ns, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := types.NamespacedName{Namespace: ns, Name: name}
	delete(t.bySvc, nn)
	delete(t.svcUID, nn)
}

// triggerTracker computes the endpoints.kubernetes.io/last-change-trigger-time
// annotation as Kubernetes does: the earliest change not yet reflected —
// a pod's Ready transition time that moved since the last sync of the
// Service, the Service's creation time on its first sync.
type triggerTracker struct {
	mu     sync.Mutex
	states map[types.NamespacedName]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

func newTriggerTracker() *triggerTracker {
	return &triggerTracker{states: map[types.NamespacedName]triggerState{}}
}

// compute returns the trigger time of this sync (zero: none to publish)
// and remembers what it saw. Calls for one Service never run concurrently
// (the work queue guarantees it).
func (t *triggerTracker) compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	prev, known := t.states[nn]
	t.mu.Unlock()

	var earliest time.Time
	consider := func(ts time.Time) {
		if earliest.IsZero() || ts.Before(earliest) {
			earliest = ts
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	for _, pod := range pods {
		c := controller.PodReadyCondition(pod)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		ts := c.LastTransitionTime.Time
		next.pods[pod.Name] = ts
		if ts.After(prev.pods[pod.Name]) {
			consider(ts)
		}
	}
	if next.service.After(prev.service) {
		consider(next.service)
	}
	t.mu.Lock()
	t.states[nn] = next
	t.mu.Unlock()
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

func (t *triggerTracker) forget(ns, name string) {
	t.mu.Lock()
	delete(t.states, types.NamespacedName{Namespace: ns, Name: name})
	t.mu.Unlock()
}

// staleVersions remembers, per key, the resourceVersion an update of the
// controller replaced: a cache still showing it has not seen the update.
type staleVersions struct {
	mu sync.Mutex
	rv map[string]string
}

func newStaleVersions() *staleVersions { return &staleVersions{rv: map[string]string{}} }

func (s *staleVersions) replaced(key, rv string) {
	s.mu.Lock()
	s.rv[key] = rv
	s.mu.Unlock()
}

func (s *staleVersions) stale(key, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.rv[key]
	return ok && old == rv
}

func (s *staleVersions) forget(key string) {
	s.mu.Lock()
	delete(s.rv, key)
	s.mu.Unlock()
}
