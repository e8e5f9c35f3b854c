package native

import (
	"context"
	"sync"

	"github.com/podkit/podkit/sandbox"
)

// keyLock serialises operations on one sandbox or container while letting
// different ones proceed in parallel.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyEntry
}

type keyEntry struct {
	ch   chan struct{}
	refs int
}

func newKeyLock() *keyLock { return &keyLock{locks: map[string]*keyEntry{}} }

// lock takes key's lock, or fails when ctx ends first.
func (k *keyLock) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	e, ok := k.locks[key]
	if !ok {
		e = &keyEntry{ch: make(chan struct{}, 1)}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	case <-ctx.Done():
		k.release(key, e)
		return nil, ctx.Err()
	}
	return func() { <-e.ch; k.release(key, e) }, nil
}

func (k *keyLock) release(key string, e *keyEntry) {
	k.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(k.locks, key)
	}
	k.mu.Unlock()
}

// fanout delivers container events to every subscriber. A slow subscriber
// loses events rather than stalling the runtime (its buffer is large, and
// a relist catches up anyway, as with CRI's event stream).
type fanout struct {
	mu     sync.Mutex
	subs   map[chan sandbox.ContainerEvent]struct{}
	closed bool
}

func newFanout() *fanout { return &fanout{subs: map[chan sandbox.ContainerEvent]struct{}{}} }

func (f *fanout) publish(e sandbox.ContainerEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

func (f *fanout) subscribe(ctx context.Context) (<-chan sandbox.ContainerEvent, error) {
	ch := make(chan sandbox.ContainerEvent, 1024)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		close(ch)
		return ch, nil
	}
	f.subs[ch] = struct{}{}
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.subs[ch]; ok {
			delete(f.subs, ch)
			close(ch)
		}
	}()
	return ch, nil
}

func (f *fanout) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for ch := range f.subs {
		delete(f.subs, ch)
		close(ch)
	}
}
