package scheduler

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// CycleState is the scratch space of one scheduling cycle: PreFilter and
// PreScore plugins write what Filter and Score read. Keys are usually the
// plugin's name plus a suffix. It is safe for concurrent use; reads, which
// Filter and Score do for every node, take no lock. Values stored must not
// be mutated once Filter or Score run (they run in parallel).
type CycleState struct {
	mu sync.Mutex // serialises writers
	// values is a small copy-on-write list: a cycle holds a handful of
	// keys, and Filter and Score read them for every node (millions of
	// reads a second on large clusters), where a linear scan comparing
	// string lengths first beats hashing the key.
	values   atomic.Pointer[[]stateEntry]
	snapshot *Snapshot
	// skipFilter is aligned with the framework's filter plugins: true when
	// the plugin's PreFilter returned ErrSkip. Written before Filter runs.
	skipFilter []bool
}

type stateEntry struct {
	key string
	v   any
}

// NewCycleState returns an empty state over the snapshot the cycle
// schedules against.
func NewCycleState(snapshot *Snapshot) *CycleState {
	return &CycleState{snapshot: snapshot}
}

// Snapshot returns the cluster snapshot of this cycle (all nodes with their
// pods), read-only.
func (s *CycleState) Snapshot() *Snapshot { return s.snapshot }

// update replaces the list by a copy without key, plus (key, v) when set.
func (s *CycleState) update(key string, v any, set bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur []stateEntry
	if p := s.values.Load(); p != nil {
		cur = *p
	}
	next := make([]stateEntry, 0, len(cur)+1)
	for _, e := range cur {
		if e.key != key {
			next = append(next, e)
		}
	}
	if set {
		next = append(next, stateEntry{key: key, v: v})
	}
	s.values.Store(&next)
}

// Write stores v under key.
func (s *CycleState) Write(key string, v any) { s.update(key, v, true) }

// Delete removes key.
func (s *CycleState) Delete(key string) { s.update(key, nil, false) }

// Read returns the value under key, or ErrStateNotFound.
func (s *CycleState) Read(key string) (any, error) {
	if p := s.values.Load(); p != nil {
		for i := range *p {
			if e := &(*p)[i]; e.key == key {
				return e.v, nil
			}
		}
	}
	return nil, fmt.Errorf("reading %q: %w", key, ErrStateNotFound)
}

// ReadAs returns the value under key as a T.
func ReadAs[T any](s *CycleState, key string) (T, error) {
	var zero T
	v, err := s.Read(key)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("cycle state %q holds %T, want %T", key, v, zero)
	}
	return t, nil
}
