package memory

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/engine"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// Store is an in-memory storage.Store. It is safe for concurrent use.
type Store struct {
	e *engine.Engine
}

var (
	_ storage.Store        = (*Store)(nil)
	_ storage.SharedWriter = (*Store)(nil)
	_ storage.OwningWriter = (*Store)(nil)
)

// New returns an empty Store at revision 0. Options only fail on
// programming errors (a negative size, a nil clock): New panics then.
func New(opts ...Option) *Store {
	var cfg engine.Config
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			panic(fmt.Sprintf("memory store: %v", err))
		}
	}
	e, err := engine.New(cfg)
	if err != nil {
		panic(fmt.Sprintf("memory store: %v", err))
	}
	return &Store{e: e}
}

// Create stores a copy of obj under key at the next revision and returns
// another copy with its resourceVersion set. It fails with ErrExists when
// key is taken and ErrInvalidObject when obj has a resourceVersion.
func (s *Store) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return s.e.Create(ctx, key, obj)
}

// CreateShared is Create returning the stored object itself, which is
// shared: read-only (storage.SharedWriter).
func (s *Store) CreateShared(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return s.e.CreateShared(ctx, key, obj)
}

// UpdateShared is Update returning the stored object itself, which is
// shared: read-only (storage.SharedWriter).
func (s *Store) UpdateShared(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return s.e.UpdateShared(ctx, key, tryUpdate)
}

// CreateOwned is CreateShared keeping obj itself, which the caller hands
// over: it becomes the stored object (storage.OwningWriter).
func (s *Store) CreateOwned(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return s.e.CreateOwned(ctx, key, obj)
}

// UpdateOwned is UpdateShared without copies: tryUpdate gets the stored
// object itself (read-only) and what it returns, handed over, becomes the
// stored object (storage.OwningWriter).
func (s *Store) UpdateOwned(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return s.e.UpdateOwned(ctx, key, tryUpdate)
}

// GetShared is Get returning the stored object itself, which is shared:
// read-only (storage.SharedReader).
func (s *Store) GetShared(ctx context.Context, key string) (runtime.Object, error) {
	return s.e.GetShared(ctx, key)
}

// Get returns a copy of the object under key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (runtime.Object, error) {
	return s.e.Get(ctx, key)
}

// List returns copies of the objects under prefix, sorted by key. Pages of
// a paginated list are read from the snapshot of the first page.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	return s.e.List(ctx, prefix, opts)
}

// Update is compare-and-swap as storage.Store documents. An update whose
// result equals the stored object (ignoring TypeMeta and resourceVersion)
// writes nothing and returns the stored object: no new revision, no event.
func (s *Store) Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return s.e.Update(ctx, key, tryUpdate)
}

// Delete removes the object under key once precondition accepts it and
// returns it stamped with the deletion's revision.
func (s *Store) Delete(ctx context.Context, key string, precondition func(cur runtime.Object) error) (runtime.Object, error) {
	return s.e.Delete(ctx, key, precondition)
}

// Watch streams the changes under prefix. Objects in events are shared
// between watchers: treat them as read-only.
func (s *Store) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	return s.e.Watch(ctx, prefix, opts)
}

// CurrentRevision returns the revision of the latest write.
func (s *Store) CurrentRevision(ctx context.Context) (uint64, error) {
	return s.e.CurrentRevision(ctx)
}

// WatchStats reports the watch cache's counters, among them the number of
// watchers dropped for being too slow.
func (s *Store) WatchStats() watchcache.Stats { return s.e.WatchStats() }

// Close ends every watch; later calls fail with ErrClosed. Idempotent.
func (s *Store) Close() error { return s.e.Close() }
