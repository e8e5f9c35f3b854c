package watchcache

import "sync"

// queue is a watcher's buffer of live events: bounded by a limit, but
// holding memory only for the events actually pending, so the limit can be
// as deep as the history (a watcher may then fall as far behind as it
// could resume from) while a hundred idle watchers cost nothing. Append
// pushes (never blocking: a full queue reports it), the watcher's reader
// pops; ready and room wake them.
type queue struct {
	limit int
	ready chan struct{} // a token after a push: the reader may pop
	room  chan struct{} // a token after a pop from a full queue

	mu    sync.Mutex
	items []*entry
	head  int
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// push queues e; it returns false, queuing nothing, when the queue is full.
func (q *queue) push(e *entry) bool {
	q.mu.Lock()
	if len(q.items)-q.head >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, e)
	q.mu.Unlock()
	signal(q.ready)
	return true
}

// pop takes the oldest event, nil when there is none.
func (q *queue) pop() *entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items) - q.head
	if n == 0 {
		return nil
	}
	e := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	switch {
	case q.head == len(q.items):
		// Empty: start over, and let a burst's backing array go.
		if cap(q.items) > 1024 {
			q.items = nil
		} else {
			q.items = q.items[:0]
		}
		q.head = 0
	case q.head >= 64 && q.head >= len(q.items)/2:
		// A reader that stays a few events behind never empties the
		// queue: move the pending events to the front so the storage
		// already read is reused instead of growing with every push.
		k := copy(q.items, q.items[q.head:])
		clear(q.items[k:])
		q.items = q.items[:k]
		q.head = 0
	}
	if n == q.limit {
		signal(q.room)
	}
	return e
}

// len is the number of events pending.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
