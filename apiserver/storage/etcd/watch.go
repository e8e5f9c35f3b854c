package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// rewatchDelay separates attempts to re-establish the store's etcd watch.
const rewatchDelay = 200 * time.Millisecond

// ingestState is the store's watch cache and how far it has caught up.
type ingestState struct {
	mu sync.Mutex
	c  *watchcache.Cache
	// progress is the highest revision etcd said the store's watch is
	// synced to; the cache's own revision is that of its last event.
	progress uint64
	// caught is closed (and replaced) whenever the cache or progress
	// advances.
	caught chan struct{}
	// wctx is the context of the etcd watch, which progress requests
	// must share to reach its stream.
	wctx context.Context
}

func (g *ingestState) cache() *watchcache.Cache {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.c
}

// advanced wakes the waiters; progress, when non-zero, is a revision etcd
// reported the watch synced to.
func (g *ingestState) advanced(progress uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if progress > g.progress {
		g.progress = progress
	}
	close(g.caught)
	g.caught = make(chan struct{})
}

// startIngest creates the cache at rev and starts feeding it.
func (s *Store) startIngest(rev int64) error {
	c, err := watchcache.New(uint64(rev), s.o.cache...)
	if err != nil {
		return err
	}
	s.ingest.c, s.ingest.progress, s.ingest.caught = c, uint64(rev), make(chan struct{})
	s.wg.Add(1)
	go s.runIngest(rev)
	return nil
}

// runIngest keeps one etcd watch of the whole prefix open, from the
// revision after the last one ingested, and appends its events to the
// cache.
func (s *Store) runIngest(from int64) {
	defer s.wg.Done()
	next := from + 1
	for s.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(s.ctx))
		s.ingest.mu.Lock()
		s.ingest.wctx = wctx
		s.ingest.mu.Unlock()
		wch := s.client.Watch(wctx, s.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(next),
			clientv3.WithPrevKV(), clientv3.WithProgressNotify())
		next = s.consume(wch, next)
		cancel()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(rewatchDelay):
		}
	}
}

// consume appends the events of one etcd watch to the cache until the
// watch ends, and returns the revision to resume from.
func (s *Store) consume(wch clientv3.WatchChan, next int64) int64 {
	for wr := range wch {
		if wr.CompactRevision != 0 {
			return s.resetCache(wr.CompactRevision) + 1
		}
		if err := wr.Err(); err != nil {
			if s.ctx.Err() == nil {
				s.o.logger.Warn("etcd watch ended; re-watching", "prefix", s.prefix, "fromRevision", next, "err", err)
			}
			return next
		}
		if wr.IsProgressNotify() {
			s.saw(wr.Header.Revision)
			s.ingest.advanced(uint64(wr.Header.Revision))
			continue
		}
		c := s.ingest.cache()
		last := c.Revision()
		events := make([]watchcache.Event, 0, len(wr.Events))
		for _, ev := range wr.Events {
			next = ev.Kv.ModRevision + 1
			if uint64(ev.Kv.ModRevision) <= last {
				// A second key of one multi-key transaction (podkit
				// never writes those): the cache keeps one event per
				// revision.
				continue
			}
			e, err := s.convert(ev)
			if err != nil {
				s.o.logger.Warn("etcd watch: skipping an event that cannot be decoded", "key", string(ev.Kv.Key), "revision", ev.Kv.ModRevision, "err", err)
				continue
			}
			events = append(events, e)
			last = e.Revision
		}
		if len(events) > 0 {
			if err := c.Append(events...); err != nil {
				if s.ctx.Err() == nil {
					s.o.logger.Warn("etcd watch: appending to the watch cache", "err", err)
				}
				return next
			}
		}
		s.saw(next - 1)
		s.ingest.advanced(0)
	}
	return next
}

// convert turns an etcd event into a cache event.
func (s *Store) convert(ev *clientv3.Event) (watchcache.Event, error) {
	key := s.storageKey(string(ev.Kv.Key))
	rev := ev.Kv.ModRevision
	out := watchcache.Event{Key: key, Revision: uint64(rev)}
	if ev.PrevKv != nil {
		prev, _, err := s.decode(s.ctx, key, ev.PrevKv.Value, ev.PrevKv.ModRevision)
		if err != nil {
			return out, err
		}
		out.PrevObject = prev
	}
	switch {
	case ev.Type == mvccpb.DELETE:
		if out.PrevObject == nil {
			return out, fmt.Errorf("deletion without the previous value (compacted)")
		}
		obj := out.PrevObject.DeepCopyObject()
		if err := storage.SetRevision(obj, uint64(rev)); err != nil {
			return out, err
		}
		out.Type, out.Object = watch.Deleted, obj
	default:
		obj, _, err := s.decode(s.ctx, key, ev.Kv.Value, rev)
		if err != nil {
			return out, err
		}
		out.Object = obj
		out.Type = watch.Modified
		if ev.IsCreate() {
			out.Type, out.PrevObject = watch.Added, nil
		}
	}
	return out, nil
}

// resetCache replaces a cache that can no longer be continued (etcd
// compacted the revisions it needed) by an empty one at etcd's current
// revision, ending every watch of the old one: their clients resume from
// their last revision or re-list. It returns the new cache's revision.
func (s *Store) resetCache(compacted int64) int64 {
	maxStore(&s.compacted, uint64(compacted))
	var rev int64
	for {
		r, err := s.etcdRevision(s.ctx)
		if err == nil {
			rev = r
			break
		}
		if s.ctx.Err() != nil {
			return 0
		}
		time.Sleep(rewatchDelay)
	}
	c, err := watchcache.New(uint64(rev), s.o.cache...)
	if err != nil { // the options were accepted once: not reachable
		panic(fmt.Sprintf("etcd store: watch cache: %v", err))
	}
	s.ingest.mu.Lock()
	old := s.ingest.c
	s.ingest.c = c
	s.ingest.mu.Unlock()
	old.Close()
	s.o.logger.Warn("etcd compacted past the store's watch; watch cache restarted", "compacted", compacted, "revision", rev)
	s.ingest.advanced(uint64(rev))
	return rev
}

// waitFor waits until the cache has reached rev (or, with progress, until
// etcd reported the watch synced to rev), at most timeout. It returns
// false on timeout and the context's error when ctx ends.
func (s *Store) waitFor(ctx context.Context, rev uint64, progress bool, timeout time.Duration) (bool, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	asked := false
	for {
		s.ingest.mu.Lock()
		reached := s.ingest.c.Revision() >= rev || (progress && s.ingest.progress >= rev)
		ch, wctx := s.ingest.caught, s.ingest.wctx
		s.ingest.mu.Unlock()
		if reached {
			return true, nil
		}
		if progress && !asked && wctx != nil {
			// Revisions without events under the prefix only show up
			// in progress notifications.
			_ = s.client.RequestProgress(wctx)
			asked = true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// watch starts a watch from the cache; see Store.Watch.
func (s *Store) watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	from := opts.ResourceVersion
	own := s.lastWrite.Load()
	if from > own && from > s.known.Load() {
		cur, err := s.etcdRevision(ctx)
		if err != nil {
			return nil, err
		}
		if from > uint64(cur) {
			return nil, fmt.Errorf("%w: %d, current: %d", storage.ErrTooLargeResourceVersion, from, cur)
		}
	}
	if c := s.compacted.Load(); from != 0 && from+1 < c {
		return nil, fmt.Errorf("%w: %d (etcd compacted to %d)", storage.ErrGone, from, c)
	}
	// Read your own writes: the cache first catches up with every write
	// this store acknowledged.
	if _, err := s.waitFor(ctx, own, false, s.o.catchUp); err != nil {
		return nil, err
	}
	c := s.ingest.cache()
	if from == 0 {
		from = max(own, c.Revision())
	}
	if from > own {
		if _, err := s.waitFor(ctx, from, true, s.o.catchUp); err != nil {
			return nil, err
		}
		c = s.ingest.cache()
	}
	start := min(from, c.Revision())
	o := opts
	o.ResourceVersion = start
	w, err := c.Watch(ctx, prefix, o)
	if err != nil {
		return nil, err
	}
	if start < from {
		return newSkipping(w, from), nil
	}
	return w, nil
}

// skipping passes on the events of a cache watch that started before the
// revision asked for, dropping those up to it.
type skipping struct {
	inner watch.Interface
	after uint64
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newSkipping(inner watch.Interface, after uint64) *skipping {
	w := &skipping{inner: inner, after: after, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *skipping) run() {
	defer close(w.out)
	defer w.inner.Stop()
	for {
		select {
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if rv, err := storage.Revision(ev.Object); err == nil && w.after > 0 {
				if rv < w.after || (rv == w.after && ev.Type != watch.Bookmark) {
					continue
				}
				w.after = 0 // past it: every later event passes
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}

func (w *skipping) ResultChan() <-chan watch.Event { return w.out }

func (w *skipping) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}
