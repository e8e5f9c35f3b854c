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
	mu       sync.Mutex // serialises writers
	values   atomic.Pointer[map[string]any]
	snapshot *Snapshot
	// skipFilter is aligned with the framework's filter plugins: true when
	// the plugin's PreFilter returned ErrSkip. Written before Filter runs.
	skipFilter []bool
}

// NewCycleState returns an empty state over the snapshot the cycle
// schedules against.
func NewCycleState(snapshot *Snapshot) *CycleState {
	return &CycleState{snapshot: snapshot}
}

// Snapshot returns the cluster snapshot of this cycle (all nodes with their
// pods), read-only.
func (s *CycleState) Snapshot() *Snapshot { return s.snapshot }

// update replaces the map by a modified copy (writes are rare).
func (s *CycleState) update(f func(m map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]any
	if cur := s.values.Load(); cur != nil {
		m = make(map[string]any, len(*cur)+1)
		for k, v := range *cur {
			m[k] = v
		}
	} else {
		m = map[string]any{}
	}
	f(m)
	s.values.Store(&m)
}

// Write stores v under key.
func (s *CycleState) Write(key string, v any) { s.update(func(m map[string]any) { m[key] = v }) }

// Delete removes key.
func (s *CycleState) Delete(key string) { s.update(func(m map[string]any) { delete(m, key) }) }

// Read returns the value under key, or ErrStateNotFound.
func (s *CycleState) Read(key string) (any, error) {
	if m := s.values.Load(); m != nil {
		if v, ok := (*m)[key]; ok {
			return v, nil
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
