package supervisor

import (
	"context"
	"encoding/json"
	"sync"
)

// Events streams task exits (the TaskState of each exited task) from the
// moment it returns until ctx ends or the connection is lost; then the
// channel is closed, and calling Events again reconnects. Exits that
// happened before, or while no stream was open, are in List: subscribe
// first, then List, and nothing is missed. Delivery never blocks the
// supervisor: undelivered exits queue up.
func (c *Client) Events(ctx context.Context) (<-chan TaskState, error) {
	cn, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	return cn.events(ctx)
}

func (c *conn) events(ctx context.Context) (<-chan TaskState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := newStateQueue()
	ack := make(chan *wireError, 1)
	acked := false // only touched by the read goroutine
	id, err := c.start(mEvents, nil, func(f frame) {
		switch {
		case !acked:
			acked = true
			ack <- f.Error
			if !f.More {
				q.end()
			}
		case !f.More:
			q.end()
		default:
			var st TaskState
			if json.Unmarshal(f.Result, &st) == nil {
				q.push(st)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	select {
	case werr := <-ack:
		if werr != nil {
			return nil, werr.err()
		}
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.err
	}
	out := make(chan TaskState)
	go func() {
		defer close(out)
		defer c.forget(id)
		deliver := func() bool {
			for _, st := range q.take() {
				select {
				case out <- st:
				case <-ctx.Done():
					return false
				}
			}
			return true
		}
		for {
			if !deliver() || q.ended() {
				return
			}
			select {
			case <-q.notify:
			case <-ctx.Done():
				return
			case <-c.done:
				deliver()
				return
			}
		}
	}()
	return out, nil
}

// stateQueue is an unbounded queue of states with a wake-up channel: the
// supervisor's side of an Events stream (so a slow client never delays an
// exit being recorded) and the client's (so a slow reader never blocks
// the connection).
type stateQueue struct {
	mu     sync.Mutex
	queue  []TaskState
	done   bool
	notify chan struct{}
}

func newStateQueue() *stateQueue { return &stateQueue{notify: make(chan struct{}, 1)} }

func (q *stateQueue) push(st TaskState) {
	q.mu.Lock()
	q.queue = append(q.queue, st)
	q.mu.Unlock()
	q.wake()
}

func (q *stateQueue) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *stateQueue) take() []TaskState {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.queue
	q.queue = nil
	return out
}

// end marks the end of the stream; ended is true once it is drained.
func (q *stateQueue) end() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.wake()
}

func (q *stateQueue) ended() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done && len(q.queue) == 0
}
