package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/index"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// DefaultMaxBatch caps the writes one group commit carries.
const DefaultMaxBatch = 1000

// Change is one durable write: Obj (stamped with its revision) stored under
// Key, or Key removed when Obj is nil.
type Change struct {
	Key string
	Obj runtime.Object
	// Rev is the revision of the write.
	Rev uint64
	// Data, when the backend's CanonicalData produced it, is Obj encoded
	// before its revision was stamped: the bytes Obj was decoded from.
	// A Persister may store them (with Rev beside them) instead of
	// encoding Obj again.
	Data []byte
}

// Persister makes writes durable.
type Persister interface {
	// Persist writes changes, in order, and records rev as the store's
	// revision, atomically and durably: when it returns nil, all of it
	// survives a crash; when it fails, none of it is visible.
	Persist(changes []Change, rev uint64) error
}

// Config assembles an Engine.
type Config struct {
	// Persister makes writes durable; nil keeps everything in memory and
	// commits inline.
	Persister Persister
	// Canonical returns an object as the backend stores it and hands it
	// back (the bolt backend round-trips it through its codec); it may
	// reuse its argument, which the engine owns. nil keeps objects as given.
	Canonical func(runtime.Object) (runtime.Object, error)
	// CanonicalData, when set, replaces Canonical: it also returns the
	// encoding the object was decoded from, which reaches the Persister in
	// Change.Data. It always builds a new object (CanonicalCopies holds).
	CanonicalData func(runtime.Object) (runtime.Object, []byte, error)
	// CanonicalCopies promises that Canonical returns a new object sharing
	// nothing with its argument, and does not keep or modify the argument:
	// the engine then hands it the caller's object without copying it first.
	CanonicalCopies bool
	// Revision is the store's revision at open; Items its contents then,
	// each with Rev <= Revision.
	Revision uint64
	Items    []*index.Item
	// Watch configures the watch cache, Index the list snapshots.
	Watch []watchcache.Option
	Index index.Options
	// MaxBatch caps the writes of one group commit (default 1000).
	MaxBatch int
	Logger   *slog.Logger
}

// Engine implements storage.Store over an index and a watch cache.
type Engine struct {
	mu     sync.RWMutex // guards tree; Lock for writes and snapshots
	tree   *index.Tree
	cache  *watchcache.Cache
	closed atomic.Bool

	persist         Persister
	canonical       func(runtime.Object) (runtime.Object, error)
	canonicalCopies bool
	canonicalData   func(runtime.Object) (runtime.Object, []byte, error)
	maxBatch        int
	log             *slog.Logger
	same            comparer // the no-op check of updates

	reqs      chan *request
	stopLoop  chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
}

var (
	_ storage.Store        = (*Engine)(nil)
	_ storage.SharedWriter = (*Engine)(nil)
	_ storage.OwningWriter = (*Engine)(nil)
)

// New returns an Engine; with a Persister it starts the group-commit loop,
// which Close stops.
func New(cfg Config) (*Engine, error) {
	if cfg.MaxBatch < 0 {
		return nil, fmt.Errorf("max batch %d: must not be negative", cfg.MaxBatch)
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cache, err := watchcache.New(cfg.Revision, cfg.Watch...)
	if err != nil {
		return nil, err
	}
	tree := index.New(cfg.Revision, cfg.Index)
	for _, it := range cfg.Items {
		if it.Rev > cfg.Revision {
			return nil, fmt.Errorf("key %q has revision %d, after the store's revision %d", it.Key, it.Rev, cfg.Revision)
		}
		tree.Put(it)
	}
	e := &Engine{
		tree:            tree,
		cache:           cache,
		persist:         cfg.Persister,
		canonical:       cfg.Canonical,
		canonicalCopies: cfg.CanonicalCopies,
		canonicalData:   cfg.CanonicalData,
		maxBatch:        cfg.MaxBatch,
		log:             cfg.Logger,
	}
	if e.persist != nil {
		e.reqs = make(chan *request, cfg.MaxBatch)
		e.stopLoop = make(chan struct{})
		e.loopDone = make(chan struct{})
		go e.loop()
	}
	return e, nil
}

// usable fails when the store is closed or ctx is done.
func (e *Engine) usable(ctx context.Context) error {
	if e.closed.Load() {
		return storage.ErrClosed
	}
	return ctx.Err()
}

// current returns the item under key, nil when there is none.
func (e *Engine) current(key string) (*index.Item, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed.Load() {
		return nil, storage.ErrClosed
	}
	it, _ := e.tree.Get(key)
	return it, nil
}

// Get implements storage.Store.
func (e *Engine) Get(ctx context.Context, key string) (runtime.Object, error) {
	obj, err := e.GetShared(ctx, key)
	if err != nil {
		return nil, err
	}
	return obj.DeepCopyObject(), nil
}

// GetShared implements storage.SharedReader: Get without the copy.
func (e *Engine) GetShared(ctx context.Context, key string) (runtime.Object, error) {
	if err := e.usable(ctx); err != nil {
		return nil, err
	}
	it, err := e.current(key)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
	}
	return it.Obj, nil
}

// List implements storage.Store. A list that asks for no continue token
// and will not need one (everything under the prefix, at most
// index.DefaultLiveListMax items, fits its limit) is read from the live
// tree under the read lock (see index.Tree.Collect: a snapshot makes the
// writes after it copy the tree's nodes). Every other page is read from
// an immutable snapshot: the first page's snapshot is kept for its
// continue token, so a paginated list is consistent at the revision of
// its first page.
func (e *Engine) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	if err := e.usable(ctx); err != nil {
		return nil, err
	}
	if opts.Continue == "" {
		if res, ok, err := e.listLive(prefix, opts); ok || err != nil {
			return res, err
		}
	}
	return e.listView(prefix, opts)
}

// listLive lists prefix from the live tree when it holds few enough items
// for one page without a continue token; ok is false when it does not.
func (e *Engine) listLive(prefix string, opts storage.ListOptions) (*storage.ListResult, bool, error) {
	most := index.DefaultLiveListMax
	if opts.Limit > 0 && opts.Limit < int64(most) {
		most = int(opts.Limit)
	}
	e.mu.RLock()
	if e.closed.Load() {
		e.mu.RUnlock()
		return nil, false, storage.ErrClosed
	}
	items, rev, ok := e.tree.Collect(prefix, most)
	e.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	res, err := index.ListItems(items, rev, prefix, opts)
	return res, true, err
}

// listView lists a page of prefix from a snapshot of the tree.
func (e *Engine) listView(prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	var (
		start string
		rev   uint64
		err   error
	)
	if opts.Continue != "" {
		// Continue and watch errors are not wrapped: their text is the
		// message Kubernetes shows clients.
		if start, rev, err = storage.DecodeContinue(prefix, opts.Continue); err != nil {
			return nil, err
		}
	}
	e.mu.Lock()
	var view *index.View
	switch {
	case e.closed.Load():
		err = storage.ErrClosed
	case opts.Continue != "":
		view, err = e.tree.ViewAt(rev)
	default:
		view = e.tree.View()
	}
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	res, err := view.List(prefix, start, opts)
	if err != nil {
		return nil, err
	}
	if res.Continue != "" {
		e.mu.Lock()
		e.tree.Retain(view)
		e.mu.Unlock()
	}
	return res, nil
}

// Watch implements storage.Store with the watch cache.
func (e *Engine) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	if err := e.usable(ctx); err != nil {
		return nil, err
	}
	return e.cache.Watch(ctx, prefix, opts)
}

// CurrentRevision implements storage.Store.
func (e *Engine) CurrentRevision(ctx context.Context) (uint64, error) {
	if err := e.usable(ctx); err != nil {
		return 0, err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.tree.Rev(), nil
}

// WatchStats reports the watch cache's counters.
func (e *Engine) WatchStats() watchcache.Stats { return e.cache.Stats() }

// Close stops accepting calls, lets the write in progress finish, fails
// queued ones with storage.ErrClosed and ends every watch. Idempotent; it
// does not close the Persister, which belongs to the backend.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed.Store(true)
		e.mu.Unlock()
		if e.persist != nil {
			close(e.stopLoop)
			<-e.loopDone
		}
		e.cache.Close()
	})
	return nil
}
