package kubelet

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// wakeups wakes pod workers at the times their syncs asked for (a back-off's
// end, a deadline, the next resync): one timer for the whole kubelet over a
// heap of the workers' wake times, instead of a timer per pod, as
// Kubernetes' pod workers share one work queue of delayed syncs. A worker
// has at most one wake time; scheduling it again replaces it.
type wakeups struct {
	clock  clock.WithTicker
	signal chan struct{} // the earliest wake time changed

	mu   sync.Mutex
	heap wakeHeap
}

func newWakeups(c clock.WithTicker) *wakeups {
	return &wakeups{clock: c, signal: make(chan struct{}, 1)}
}

// schedule wakes w at at (at once if it has passed), replacing its
// earlier wake time.
func (s *wakeups) schedule(w *podWorker, at time.Time) {
	if !s.clock.Now().Before(at) {
		s.cancel(w)
		w.kick()
		return
	}
	s.mu.Lock()
	w.wakeAt = at
	if w.wakeIndex >= 0 {
		heap.Fix(&s.heap, w.wakeIndex)
	} else {
		heap.Push(&s.heap, w)
	}
	first := s.heap[0] == w
	s.mu.Unlock()
	if first {
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}
}

// cancel forgets w's wake time.
func (s *wakeups) cancel(w *podWorker) {
	s.mu.Lock()
	if w.wakeIndex >= 0 {
		heap.Remove(&s.heap, w.wakeIndex)
	}
	s.mu.Unlock()
}

// run wakes the workers whose time has come until ctx ends.
func (s *wakeups) run(ctx context.Context) {
	timer := s.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, ok := s.wakeDue()
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		wait := time.Hour
		if ok {
			wait = max(next.Sub(s.clock.Now()), 0)
		}
		timer.Reset(wait)
		// The clock may have passed next while the timer was set.
		if ok && !s.clock.Now().Before(next) {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.signal:
		case <-timer.C():
		}
	}
}

// wakeDue wakes the workers whose time has come and returns the next
// wake time, if any.
func (s *wakeups) wakeDue() (time.Time, bool) {
	now := s.clock.Now()
	var due []*podWorker
	s.mu.Lock()
	for len(s.heap) > 0 && !s.heap[0].wakeAt.After(now) {
		due = append(due, heap.Pop(&s.heap).(*podWorker))
	}
	var next time.Time
	ok := len(s.heap) > 0
	if ok {
		next = s.heap[0].wakeAt
	}
	s.mu.Unlock()
	for _, w := range due {
		w.kick()
	}
	return next, ok
}

// wakeHeap orders workers by wake time; each knows its index (-1: not in
// the heap).
type wakeHeap []*podWorker

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].wakeAt.Before(h[j].wakeAt) }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].wakeIndex, h[j].wakeIndex = i, j
}

func (h *wakeHeap) Push(x any) {
	w := x.(*podWorker)
	w.wakeIndex = len(*h)
	*h = append(*h, w)
}

func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.wakeIndex = -1
	return w
}
