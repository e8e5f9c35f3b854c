package watchcache

import (
	"sort"
	"time"
)

// entry is an Event as the cache keeps it.
type entry struct {
	Event
	at time.Time // when it was appended, for age-based retention
}

// ring is a fixed-capacity FIFO of entries in increasing revision order.
type ring struct {
	buf  []*entry
	head int // index of the oldest entry
	n    int
}

func newRing(capacity int) ring { return ring{buf: make([]*entry, capacity)} }

func (r *ring) len() int { return r.n }

// at returns the i-th oldest entry.
func (r *ring) at(i int) *entry { return r.buf[(r.head+i)%len(r.buf)] }

// push appends e. When the ring is full the oldest entry makes room and is
// returned. A zero-capacity ring keeps nothing and returns e itself.
func (r *ring) push(e *entry) (evicted *entry) {
	if len(r.buf) == 0 {
		return e
	}
	if r.n == len(r.buf) {
		evicted = r.pop()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	return evicted
}

// pop removes and returns the oldest entry, nil when empty.
func (r *ring) pop() *entry {
	if r.n == 0 {
		return nil
	}
	e := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return e
}

// oldest returns the oldest entry, nil when empty.
func (r *ring) oldest() *entry {
	if r.n == 0 {
		return nil
	}
	return r.buf[r.head]
}

// after returns, oldest first, the entries with a revision above rev whose
// key matches keep.
func (r *ring) after(rev uint64, keep func(key string) bool) []*entry {
	first := sort.Search(r.n, func(i int) bool { return r.at(i).Revision > rev })
	var out []*entry
	for i := first; i < r.n; i++ {
		if e := r.at(i); keep(e.Key) {
			out = append(out, e)
		}
	}
	return out
}
