package fake

import (
	"context"
	"sync"
	"time"

	"github.com/podkit/podkit/sandbox"
)

// subscriber is one Events channel. Events queue without bound so the
// runner never blocks on a slow reader; one goroutine per subscriber moves
// them to the channel.
type subscriber struct {
	mu     sync.Mutex
	queue  []sandbox.ContainerEvent
	notify chan struct{}
}

// Events streams container state changes, in the order they happened,
// until ctx ends; then the channel is closed.
func (r *Runner) Events(ctx context.Context) (_ <-chan sandbox.ContainerEvent, err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.recordLocked("Events", "", now, err) }()
	if err := s.injectedLocked("Events"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &subscriber{notify: make(chan struct{}, 1)}
	s.subs[sub] = struct{}{}
	out := make(chan sandbox.ContainerEvent)
	go s.pump(ctx, sub, out)
	return out, nil
}

func (s *state) pump(ctx context.Context, sub *subscriber, out chan<- sandbox.ContainerEvent) {
	defer close(out)
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}()
	for {
		sub.mu.Lock()
		batch := sub.queue
		sub.queue = nil
		sub.mu.Unlock()
		for _, ev := range batch {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-sub.notify:
		case <-ctx.Done():
			return
		}
	}
}

// emitLocked queues an event for every subscriber.
func (s *state) emitLocked(c *containerRec, typ sandbox.ContainerEventType, at time.Time) {
	if len(s.subs) == 0 {
		return
	}
	ev := sandbox.ContainerEvent{ContainerID: c.st.ID, SandboxID: c.st.SandboxID, Type: typ, Time: at}
	for sub := range s.subs {
		sub.mu.Lock()
		sub.queue = append(sub.queue, ev)
		sub.mu.Unlock()
		select {
		case sub.notify <- struct{}{}:
		default:
		}
	}
}
