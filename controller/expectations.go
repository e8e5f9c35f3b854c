package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long unfulfilled expectations block a sync
// before they are considered stale (a watch event was lost): Kubernetes'
// 5 minutes.
const ExpectationsTimeout = 5 * time.Minute

// Expectations records, per controller key, how many creations and
// deletions the controller issued but has not yet seen in its informer
// cache. A controller syncs a key only when its expectations are satisfied,
// so it never acts twice on a cache that has not caught up with its own
// writes (the ReplicaSet controller would otherwise create too many pods).
//
// It is Kubernetes' ControllerExpectations: a key with no record is
// satisfied; so is one whose counts reached zero or whose record is older
// than the timeout.
type Expectations struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu      sync.Mutex
	records map[string]*expectation
}

type expectation struct {
	add, del  int64
	timestamp time.Time
}

// NewExpectations returns empty expectations timing out after
// ExpectationsTimeout on clk (the real clock when nil).
func NewExpectations(clk clock.PassiveClock) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Expectations{clock: clk, timeout: ExpectationsTimeout, records: map[string]*expectation{}}
}

// SetTimeout changes the staleness timeout (for tests and tuning).
func (e *Expectations) SetTimeout(d time.Duration) {
	e.mu.Lock()
	e.timeout = d
	e.mu.Unlock()
}

// Satisfied reports whether the controller may sync key: no expectations,
// all observed, or expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return true
	}
	if r.add <= 0 && r.del <= 0 {
		return true
	}
	return e.clock.Since(r.timestamp) > e.timeout
}

// Get returns the outstanding creations and deletions of key and whether
// a record exists.
func (e *Expectations) Get(key string) (add, del int64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return 0, 0, false
	}
	return r.add, r.del, true
}

// Set replaces key's expectations with add creations and del deletions,
// stamped now.
func (e *Expectations) Set(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &expectation{add: int64(add), del: int64(del), timestamp: e.clock.Now()}
}

// ExpectCreations expects n creations (and no deletions) for key.
func (e *Expectations) ExpectCreations(key string, n int) { e.Set(key, n, 0) }

// ExpectDeletions expects n deletions (and no creations) for key.
func (e *Expectations) ExpectDeletions(key string, n int) { e.Set(key, 0, n) }

// Raise adds to key's outstanding counts (without restamping).
func (e *Expectations) Raise(key string, add, del int) { e.adjust(key, int64(add), int64(del)) }

// Lower subtracts from key's outstanding counts; used when a create or
// delete call failed and no watch event will come for it.
func (e *Expectations) Lower(key string, add, del int) { e.adjust(key, -int64(add), -int64(del)) }

// CreationObserved records that one expected creation was seen.
func (e *Expectations) CreationObserved(key string) { e.adjust(key, -1, 0) }

// DeletionObserved records that one expected deletion was seen.
func (e *Expectations) DeletionObserved(key string) { e.adjust(key, 0, -1) }

// Delete forgets key (its owner was deleted).
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	delete(e.records, key)
	e.mu.Unlock()
}

func (e *Expectations) adjust(key string, add, del int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return
	}
	r.add += add
	r.del += del
}

// UIDTrackingExpectations are Expectations whose deletions are tracked by
// the keys of the objects being deleted: a pod that was already terminating
// (deletionTimestamp set) and then disappears counts once, not twice.
type UIDTrackingExpectations struct {
	*Expectations

	mu      sync.Mutex
	pending map[string]sets.Set[string]
}

// NewUIDTrackingExpectations wraps NewExpectations(clk).
func NewUIDTrackingExpectations(clk clock.PassiveClock) *UIDTrackingExpectations {
	return &UIDTrackingExpectations{Expectations: NewExpectations(clk), pending: map[string]sets.Set[string]{}}
}

// ExpectDeletions expects the deletion of the objects with the given keys.
func (u *UIDTrackingExpectations) ExpectDeletions(key string, objKeys []string) {
	u.mu.Lock()
	u.pending[key] = sets.New(objKeys...)
	u.mu.Unlock()
	u.Expectations.ExpectDeletions(key, len(objKeys))
}

// DeletionObserved records that the object objKey of key went away (or
// began terminating); objects that were not expected are ignored.
func (u *UIDTrackingExpectations) DeletionObserved(key, objKey string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.pending[key]
	if s == nil || !s.Has(objKey) {
		return
	}
	s.Delete(objKey)
	u.Expectations.DeletionObserved(key)
}

// Delete forgets key and its tracked deletions.
func (u *UIDTrackingExpectations) Delete(key string) {
	u.mu.Lock()
	delete(u.pending, key)
	u.mu.Unlock()
	u.Expectations.Delete(key)
}
