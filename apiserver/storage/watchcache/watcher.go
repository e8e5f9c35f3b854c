package watchcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/apiserver/storage"
)

// Batcher is implemented by the watches a Cache returns. A consumer that
// reads with NextBatch instead of ResultChan takes events straight from the
// watch's buffer: no goroutine per watch and one goroutine hand-off per
// event instead of two, which is what fanning an event out to many
// watchers costs most besides writing it (the API server's watch handler
// reads this way). A watch is read either way, never both: the first of
// ResultChan and NextBatch to be called decides.
type Batcher interface {
	watch.Interface
	// NextBatch appends to buf the next events of the watch, in order, at
	// most limit of them (at least one), and returns buf. It blocks until
	// there is at least one event or bookmark, or the watch ends: then ok
	// is false, the events appended before the end are still returned, and
	// every later call returns ok false too. Not safe for concurrent use;
	// Stop may be called concurrently and ends it.
	NextBatch(buf []watch.Event, limit int) (events []watch.Event, ok bool)
}

// Ways a watch is read.
const (
	modeUnset  int32 = iota // neither ResultChan nor NextBatch called yet
	modeChan                // a goroutine moves events to the result channel
	modeDirect              // the consumer calls NextBatch (or the watch ended unread)
)

// watcher is one Watch. Its buffer (in) is filled by Cache.Append; either
// a goroutine moves events from it to the unbuffered result channel
// (ResultChan) or the consumer takes them itself (NextBatch).
type watcher struct {
	cache    *Cache
	ctx      context.Context
	prefix   string
	pred     storage.Predicate
	index    *storage.WatchIndex // nil: not indexed
	newFunc  func() runtime.Object
	bookmark bool
	ticker   clock.Ticker // nil without bookmarks
	tick     <-chan time.Time

	in      *queue           // live events, bounded: overflow drops the watcher
	result  chan watch.Event // what a ResultChan reader reads
	stop    chan struct{}    // closed by Stop
	dropped chan struct{}    // closed by the cache when the buffer overflowed
	done    chan struct{}    // closed when the watch has ended

	mode      atomic.Int32
	stopOnce  sync.Once
	endOnce   sync.Once
	stopAfter func() bool // unregisters the context's AfterFunc

	// Owned by the reader (the goroutine or the NextBatch caller).
	history []*entry // events from before the watch started, not yet read
	lastRev uint64   // revision of the last event processed
	sentRev uint64   // highest revision the client has been told about
	ended   bool
}

var _ Batcher = (*watcher)(nil)

// ResultChan returns the events; it is closed when the watch ends. The
// first call starts the goroutine feeding it.
func (w *watcher) ResultChan() <-chan watch.Event {
	if w.mode.CompareAndSwap(modeUnset, modeChan) {
		w.startGoroutine()
	}
	return w.result
}

// NextBatch implements Batcher.
func (w *watcher) NextBatch(buf []watch.Event, limit int) ([]watch.Event, bool) {
	if w.mode.Load() != modeDirect && !w.mode.CompareAndSwap(modeUnset, modeDirect) {
		return buf, false // read through ResultChan
	}
	if w.ended {
		return buf, false
	}
	buf, ok := w.pull(buf, max(limit, 1))
	if !ok {
		w.ended = true
		w.finish()
	}
	return buf, ok
}

// Stop ends the watch and waits until it has ended. Idempotent.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	if w.mode.CompareAndSwap(modeUnset, modeDirect) || w.mode.Load() == modeDirect {
		w.finish()
	}
	<-w.done
}

// startGoroutine starts the goroutine feeding the result channel, unless
// the cache is closed already.
func (w *watcher) startGoroutine() {
	c := w.cache
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if closed {
		w.finish()
		return
	}
	go w.run()
}

// finish releases the watch: it leaves the cache, its ticker stops, and
// its result and done channels close. Idempotent.
func (w *watcher) finish() {
	w.endOnce.Do(func() {
		w.cache.remove(w)
		w.stopAfter()
		if w.ticker != nil {
			w.ticker.Stop()
		}
		close(w.result)
		close(w.done)
	})
}

// run feeds the result channel one event at a time.
func (w *watcher) run() {
	defer func() {
		w.finish()
		w.cache.wg.Done()
	}()
	var buf []watch.Event
	for {
		var ok bool
		buf, ok = w.pull(buf[:0], 1)
		for _, ev := range buf {
			if !w.send(ev) {
				return
			}
		}
		if !ok {
			return
		}
	}
}

// pull appends up to limit events for the client to buf: history first,
// then live events, waiting for the first one. ok is false when the watch
// has ended.
func (w *watcher) pull(buf []watch.Event, limit int) ([]watch.Event, bool) {
	c := w.cache
	start := len(buf)
	for len(buf)-start < limit {
		var e *entry
		if len(w.history) > 0 {
			e, w.history[0], w.history = w.history[0], nil, w.history[1:]
		} else if e = w.in.pop(); e == nil && len(buf) > start {
			// Something to return and nothing more waiting.
			return buf, true
		} else if e == nil {
			select {
			case <-w.in.ready:
				continue
			case <-w.tick:
				if ev, ok := w.bookmarkEvent(); ok {
					buf = append(buf, ev)
				}
				continue
			case <-w.dropped:
				w.logDropped()
				return buf, false
			case <-w.stop:
				return buf, false
			case <-w.ctx.Done():
				return buf, false
			case <-c.closedCh:
				return buf, false
			}
		}
		w.lastRev = e.Revision
		if ev, ok := convert(&e.Event, w.pred); ok {
			buf = append(buf, ev)
			w.sentRev = e.Revision
		}
	}
	return buf, true
}

// send blocks until the client takes ev or the watch ends.
func (w *watcher) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.dropped:
		w.logDropped()
		return false
	case <-w.stop:
		return false
	case <-w.ctx.Done():
		return false
	case <-w.cache.closedCh:
		return false
	}
}

// bookmarkEvent returns a bookmark telling the client the revision it has
// caught up to, when that is news to it.
func (w *watcher) bookmarkEvent() (watch.Event, bool) {
	rev := w.cache.progress(w, w.lastRev)
	if rev <= w.sentRev {
		return watch.Event{}, false
	}
	obj := w.newFunc()
	if err := storage.SetRevision(obj, rev); err != nil {
		w.cache.opts.logger.Error("watch bookmark: cannot stamp the bookmark object", "prefix", w.prefix, "err", err)
		return watch.Event{}, false
	}
	w.sentRev = rev
	return watch.Event{Type: watch.Bookmark, Object: obj}, true
}

func (w *watcher) logDropped() {
	attrs := []any{"prefix", w.prefix, "buffer", w.cache.opts.watcherBuffer, "lastRevision", w.lastRev}
	if w.index != nil {
		attrs = append(attrs, "index", w.index.Name+"="+w.index.Value)
	}
	w.cache.opts.logger.Warn("watch: dropping a watcher too slow to keep up", attrs...)
}

// convert applies Kubernetes predicate semantics to an event: an object
// entering the selection is ADDED, one staying in it MODIFIED, one leaving
// it DELETED (carrying the new state, as storage.WatchOptions documents).
// ok is false when the watcher is not told about the event at all.
func convert(e *Event, pred storage.Predicate) (ev watch.Event, ok bool) {
	if pred == nil {
		return watch.Event{Type: e.Type, Object: e.Object}, true
	}
	switch e.Type {
	case watch.Added, watch.Deleted:
		if pred(e.Object) {
			return watch.Event{Type: e.Type, Object: e.Object}, true
		}
		return watch.Event{}, false
	}
	cur := pred(e.Object)
	old := e.PrevObject != nil && pred(e.PrevObject)
	switch {
	case cur && old:
		return watch.Event{Type: watch.Modified, Object: e.Object}, true
	case cur:
		return watch.Event{Type: watch.Added, Object: e.Object}, true
	case old:
		// Like kube-apiserver's cacher: the watcher last saw the previous
		// state, so DELETED carries it, stamped with this event's revision.
		prev := e.PrevObject.DeepCopyObject()
		if err := storage.SetRevision(prev, e.Revision); err != nil {
			return watch.Event{Type: watch.Deleted, Object: e.Object}, true
		}
		return watch.Event{Type: watch.Deleted, Object: prev}, true
	}
	return watch.Event{}, false
}
