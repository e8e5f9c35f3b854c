package watchcache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// Event is one change as a store reports it.
type Event struct {
	// Type is watch.Added, watch.Modified or watch.Deleted.
	Type watch.EventType
	Key  string
	// Object is the state after the change; for a deletion, the last state
	// stamped with the deletion's revision. Shared and read-only.
	Object runtime.Object
	// PrevObject is the state before the change, nil for Added. Shared and
	// read-only.
	PrevObject runtime.Object
	// Revision of the change; strictly increasing from event to event.
	Revision uint64
}

// Stats describes a Cache at one instant.
type Stats struct {
	// Revision is the revision of the latest event (or the start revision).
	Revision uint64
	// Floor is the oldest revision a watch may start from: events after it
	// are all kept.
	Floor uint64
	// Events is the number of events kept.
	Events int
	// Watchers is the number of open watches.
	Watchers int
	// Dropped counts the watchers dropped for being too slow, ever.
	Dropped uint64
}

// Cache keeps recent events and fans them out to watchers. It is safe for
// concurrent use; Append must be called in revision order.
type Cache struct {
	opts options

	mu       sync.Mutex
	rev      uint64
	floor    uint64
	ring     ring
	watchers watcherSet
	dropped  uint64
	closed   bool
	// budget is the dispatch budget left (WithDispatchBudget), as of
	// budgetAt (real time: it bounds how long writers really wait).
	budget   time.Duration
	budgetAt time.Time

	closedCh chan struct{}
	wg       sync.WaitGroup
}

// New returns a Cache whose history starts at revision rev: the store's
// revision when it opened. Watches may start from rev or later.
func New(rev uint64, opts ...Option) (*Cache, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("watch cache: %w", err)
		}
	}
	return &Cache{
		opts:     o,
		rev:      rev,
		floor:    rev,
		ring:     newRing(o.capacity),
		watchers: newWatcherSet(),
		closedCh: make(chan struct{}),
		budget:   o.dispatchBudget,
		budgetAt: time.Now(),
	}, nil
}

// Append records events, which must carry revisions above every revision
// appended before, in increasing order, and hands them to the watchers
// whose prefix they fall under. A watcher whose buffer is full is waited
// for only within the dispatch budget (WithDispatchBudget), then dropped.
// It fails with storage.ErrClosed after Close.
func (c *Cache) Append(events ...Event) error {
	now := c.opts.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return storage.ErrClosed
	}
	for _, ev := range events {
		if ev.Revision <= c.rev {
			return fmt.Errorf("watch cache: event %q at revision %d is not after revision %d", ev.Key, ev.Revision, c.rev)
		}
		e := &entry{Event: ev, at: now}
		if old := c.ring.push(e); old != nil {
			c.floor = old.Revision
		}
		c.rev = ev.Revision
		c.watchers.visit(&e.Event, func(w *watcher) {
			if !w.in.push(e) && !c.waitLocked(w, e) {
				c.dropLocked(w)
			}
		})
	}
	c.expireLocked()
	return nil
}

// waitLocked waits, within the dispatch budget left, for room in w's
// buffer for e; it returns whether e was queued. The budget not used is
// given back.
func (c *Cache) waitLocked(w *watcher, e *entry) bool {
	now := time.Now()
	c.budget = min(c.opts.dispatchBudget, c.budget+time.Duration(float64(dispatchRefillPerSecond)*now.Sub(c.budgetAt).Seconds()))
	c.budgetAt = now
	if c.budget <= 0 {
		return false
	}
	t := time.NewTimer(c.budget)
	defer t.Stop()
	defer func() {
		c.budget = max(c.budget-time.Since(now), 0)
		c.budgetAt = time.Now()
	}()
	for {
		select {
		case <-w.in.room:
			if w.in.push(e) {
				return true
			}
		case <-t.C:
			return false
		case <-w.stop:
			return false
		case <-w.ctx.Done():
			return false
		}
	}
}

// dropLocked removes a watcher whose buffer overflowed; its goroutine
// notices, logs and closes the result channel.
func (c *Cache) dropLocked(w *watcher) {
	c.watchers.remove(w)
	select {
	case <-w.stop:
		return // ending anyway: not a slow reader
	case <-w.ctx.Done():
		return
	default:
	}
	c.dropped++
	close(w.dropped)
}

// expireLocked forgets events older than the max age.
func (c *Cache) expireLocked() {
	if c.opts.maxAge <= 0 {
		return
	}
	now := c.opts.clock.Now()
	for e := c.ring.oldest(); e != nil && now.Sub(e.at) > c.opts.maxAge; e = c.ring.oldest() {
		c.ring.pop()
		c.floor = e.Revision
	}
}

// Watch starts a watch of the keys under prefix; see storage.WatchOptions
// and the package documentation for the semantics. The watch ends when ctx
// is done, Stop is called, the watcher is dropped or the Cache is closed.
// The watch returned is also a Batcher.
func (c *Cache) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, storage.ErrClosed
	}
	c.expireLocked()
	from := opts.ResourceVersion
	switch {
	case from == 0:
		from = c.rev
	case from > c.rev:
		return nil, fmt.Errorf("%w: %d, current: %d", storage.ErrTooLargeResourceVersion, from, c.rev)
	case from < c.floor:
		return nil, fmt.Errorf("%w: %d (%d)", storage.ErrGone, from, c.floor)
	}
	history := c.ring.after(from, func(key string) bool { return strings.HasPrefix(key, prefix) })
	if opts.Index != nil {
		history = slices.DeleteFunc(history, func(e *entry) bool { return !indexMatches(opts.Index, &e.Event) })
	}
	w := &watcher{
		cache:    c,
		ctx:      ctx,
		prefix:   prefix,
		pred:     opts.Predicate,
		index:    opts.Index,
		newFunc:  opts.NewFunc,
		bookmark: opts.Bookmarks && opts.NewFunc != nil,
		in:       newQueue(c.opts.watcherBuffer),
		result:   make(chan watch.Event),
		stop:     make(chan struct{}),
		dropped:  make(chan struct{}),
		done:     make(chan struct{}),
		history:  history,
		lastRev:  from,
		sentRev:  from,
	}
	if w.bookmark {
		w.ticker = c.opts.clock.NewTicker(c.opts.bookmarkInterval)
		w.tick = w.ticker.C()
	}
	// A watch nobody reads still ends with its context: it leaves the cache
	// and its result channel closes.
	w.stopAfter = context.AfterFunc(ctx, func() {
		if w.mode.CompareAndSwap(modeUnset, modeDirect) {
			w.finish()
		}
	})
	c.watchers.add(w)
	return w, nil
}

// Revision returns the revision of the latest event appended, or the start
// revision when there is none.
func (c *Cache) Revision() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// Stats returns counters describing the cache.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return Stats{
		Revision: c.rev,
		Floor:    c.floor,
		Events:   c.ring.len(),
		Watchers: c.watchers.len(),
		Dropped:  c.dropped,
	}
}

// Close ends every watch (their result channels close, NextBatch returns
// false) and waits for the goroutines of ResultChan readers to exit. Later Append and Watch calls fail with
// storage.ErrClosed. Close is idempotent.
func (c *Cache) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.closedCh)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// remove forgets a watcher that ended on its own.
func (c *Cache) remove(w *watcher) {
	c.mu.Lock()
	c.watchers.remove(w)
	c.mu.Unlock()
}

// progress returns the revision watcher w has caught up to, given the
// revision of the last event it processed: when nothing is pending for it,
// every event up to the cache's revision has been processed.
func (c *Cache) progress(w *watcher, last uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.in.len() == 0 && c.rev > last {
		return c.rev
	}
	return last
}
