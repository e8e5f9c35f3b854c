package watchcache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// watcher is one Watch: a goroutine moving events from its buffer (in) to
// the unbuffered result channel the client reads.
type watcher struct {
	cache    *Cache
	ctx      context.Context
	prefix   string
	pred     storage.Predicate
	newFunc  func() runtime.Object
	bookmark bool

	in      chan *entry      // live events, bounded: overflow drops the watcher
	result  chan watch.Event // what the client reads
	stop    chan struct{}    // closed by Stop
	dropped chan struct{}    // closed by the cache when the buffer overflowed
	done    chan struct{}    // closed when the goroutine has exited

	stopOnce sync.Once

	// Owned by the goroutine.
	lastRev uint64 // revision of the last event processed
	sentRev uint64 // highest revision the client has been told about
}

var _ watch.Interface = (*watcher)(nil)

// ResultChan returns the events; it is closed when the watch ends.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch and waits for its goroutine to exit. Idempotent.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *watcher) run(history []*entry) {
	c := w.cache
	defer func() {
		c.remove(w)
		close(w.result)
		close(w.done)
		c.wg.Done()
	}()
	for _, e := range history {
		if !w.deliver(e) {
			return
		}
	}
	var tick <-chan time.Time
	if w.bookmark {
		t := c.opts.clock.NewTicker(c.opts.bookmarkInterval)
		defer t.Stop()
		tick = t.C()
	}
	for {
		select {
		case e := <-w.in:
			if !w.deliver(e) {
				return
			}
		case <-tick:
			if !w.sendBookmark() {
				return
			}
		case <-w.dropped:
			w.logDropped()
			return
		case <-w.stop:
			return
		case <-w.ctx.Done():
			return
		case <-c.closedCh:
			return
		}
	}
}

// deliver processes one event: converts it for the predicate and sends it.
// It returns false when the watch has ended.
func (w *watcher) deliver(e *entry) bool {
	w.lastRev = e.Revision
	ev, ok := convert(&e.Event, w.pred)
	if !ok {
		return true
	}
	if !w.send(ev) {
		return false
	}
	w.sentRev = e.Revision
	return true
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

// sendBookmark tells the client the revision it has caught up to, when that
// is news to it.
func (w *watcher) sendBookmark() bool {
	rev := w.cache.progress(w, w.lastRev)
	if rev <= w.sentRev {
		return true
	}
	obj := w.newFunc()
	if err := storage.SetRevision(obj, rev); err != nil {
		w.cache.opts.logger.Error("watch bookmark: cannot stamp the bookmark object", "prefix", w.prefix, "err", err)
		return true
	}
	if !w.send(watch.Event{Type: watch.Bookmark, Object: obj}) {
		return false
	}
	w.sentRev = rev
	return true
}

func (w *watcher) logDropped() {
	w.cache.opts.logger.Warn("watch: dropping a watcher too slow to keep up",
		"prefix", w.prefix, "buffer", w.cache.opts.watcherBuffer, "lastRevision", w.lastRev)
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
