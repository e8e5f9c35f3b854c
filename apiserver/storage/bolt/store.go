package bolt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/engine"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// ErrLocked: another process (or another Store in this one) has the file
// open.
var ErrLocked = errors.New("bolt file is locked by another process")

// Store is a storage.Store persisted in a bbolt file. It is safe for
// concurrent use.
type Store struct {
	e         *engine.Engine
	db        *bbolt.DB
	closeOnce sync.Once
	closeErr  error
}

var (
	_ storage.Store        = (*Store)(nil)
	_ storage.SharedWriter = (*Store)(nil)
	_ storage.OwningWriter = (*Store)(nil)
)

// Open opens (creating if needed) the store in the file at path, encoding
// objects with codec, and loads its contents. It fails with ErrLocked when
// the file stays locked for the lock timeout.
func Open(path string, codec runtime.Codec, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("bolt store %s: %w", path, err)
		}
	}
	if codec == nil {
		return nil, fmt.Errorf("bolt store %s: nil codec", path)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:        o.lockTimeout,
		NoFreelistSync: true, // rebuilt at open; never affects durability
		FreelistType:   bbolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("bolt store %s: %w (waited %s): %w", path, ErrLocked, o.lockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("bolt store %s: %w", path, err)
	}
	p := &persister{db: db, codec: codec}
	rev, items, err := p.load()
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store %s: loading: %w", path, err)
	}
	cfg := o.engine
	cfg.Persister, cfg.CanonicalData, cfg.Revision, cfg.Items = p, p.canonical, rev, items
	e, err := engine.New(cfg)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store %s: %w", path, err)
	}
	return &Store{e: e, db: db}, nil
}

// Create stores obj under key at the next revision, durably, and returns
// it as stored (decoded form: empty TypeMeta) with its resourceVersion set.
// It fails with ErrExists when key is taken and ErrInvalidObject when obj
// has a resourceVersion or the codec cannot encode it.
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

// CreateOwned is CreateShared for an obj the caller hands over
// (storage.OwningWriter). The store keeps objects as its codec decodes
// them: it stores the object decoded from obj's encoding and drops obj.
func (s *Store) CreateOwned(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return s.e.CreateOwned(ctx, key, obj)
}

// UpdateOwned is UpdateShared without copying the current object:
// tryUpdate gets the stored object itself (read-only) and hands over what
// it returns, which the store encodes and keeps decoded, as CreateOwned
// does (storage.OwningWriter).
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

// Close ends every watch, waits for the commit in progress, fails queued
// writes with ErrClosed and closes the file, releasing its lock. Later
// calls fail with ErrClosed; Close itself is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		_ = s.e.Close()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("bolt store: closing: %w", err)
		}
	})
	return s.closeErr
}
