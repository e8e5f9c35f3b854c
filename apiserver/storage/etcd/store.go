package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// Store is a storage.Store in etcd. It is safe for concurrent use, and
// several Stores (in several processes) may share one etcd and prefix.
type Store struct {
	cfg     Config
	o       options
	client  *clientv3.Client
	prefix  string // etcd key prefix replacing "/registry", no trailing "/"
	metrics *metrics

	closed atomic.Bool
	ctx    context.Context // ends background work; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// lastWrite is the highest revision this store acknowledged a write
	// at; known the highest etcd revision any response reported;
	// compacted the revision etcd was last compacted to, as far as this
	// store knows.
	lastWrite, known, compacted atomic.Uint64

	ingest ingestState
}

var _ storage.Store = (*Store)(nil)

// New connects to etcd and returns a Store whose watch cache starts at
// etcd's current revision.
func New(ctx context.Context, cfg Config, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("etcd store: %w", err)
		}
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd store: no endpoints")
	}
	if cfg.Codec == nil {
		return nil, errors.New("etcd store: nil codec")
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix == "" {
		prefix = DefaultPrefix
	}
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return nil, fmt.Errorf("etcd store: prefix %q must start with /", cfg.Prefix)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		TLS:         cfg.TLS,
		DialTimeout: o.dialTimeout,
		Logger:      zap.NewNop(),
		// Keepalives notice a member that stopped answering, so the
		// client moves to another endpoint (kube-apiserver's values).
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd store %v: connecting: %w", cfg.Endpoints, err)
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Store{cfg: cfg, o: o, client: client, prefix: prefix, ctx: bg, cancel: cancel}
	if s.metrics, err = newMetrics(o.registerer); err != nil {
		cancel()
		_ = client.Close()
		return nil, fmt.Errorf("etcd store: %w", err)
	}
	rev, err := s.etcdRevision(ctx)
	if err != nil {
		cancel()
		_ = client.Close()
		return nil, fmt.Errorf("etcd store %v: %w", cfg.Endpoints, err)
	}
	if err := s.startIngest(rev); err != nil {
		cancel()
		_ = client.Close()
		return nil, fmt.Errorf("etcd store: %w", err)
	}
	if o.compactionInterval > 0 {
		s.wg.Add(1)
		go s.compactLoop(o.compactionInterval)
	}
	return s, nil
}

// Client returns the etcd client the store uses (leader election or
// inspection may share it). Closing the store closes it.
func (s *Store) Client() *clientv3.Client { return s.client }

// etcdKey maps a storage key to its etcd key.
func (s *Store) etcdKey(key string) string {
	return s.prefix + strings.TrimPrefix(key, "/registry")
}

// storageKey maps an etcd key back to its storage key.
func (s *Store) storageKey(key string) string {
	return "/registry" + strings.TrimPrefix(key, s.prefix)
}

// check fails calls on a closed store or with a finished context.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return storage.ErrClosed
	}
	return ctx.Err()
}

// reqCtx bounds one etcd request.
func (s *Store) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.requestTimeout)
}

// fail wraps an etcd error of op on key; after Close it is ErrClosed, and
// a finished caller context wins over the client's report of it.
func (s *Store) fail(ctx context.Context, op, key string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("etcd %s %q: %w", op, key, storage.ErrClosed)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("etcd %s %q: %w", op, key, cerr)
	}
	return fmt.Errorf("etcd %s %q: %w", op, key, err)
}

// saw records a revision etcd reported.
func (s *Store) saw(rev int64) { maxStore(&s.known, uint64(rev)) }

// wrote records the revision of an acknowledged write.
func (s *Store) wrote(rev int64) {
	s.saw(rev)
	maxStore(&s.lastWrite, uint64(rev))
}

func maxStore(v *atomic.Uint64, n uint64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// encode returns obj's codec encoding (plain) and the value to store
// (plain after the transformer). obj must carry no resourceVersion.
func (s *Store) encode(ctx context.Context, key string, obj runtime.Object) (plain, stored []byte, err error) {
	var buf bytes.Buffer
	if err := s.cfg.Codec.Encode(obj, &buf); err != nil {
		return nil, nil, fmt.Errorf("encoding %q: %w: %w", key, storage.ErrInvalidObject, err)
	}
	plain = buf.Bytes()
	if s.cfg.Transformer == nil {
		return plain, plain, nil
	}
	stored, err = s.cfg.Transformer.TransformToStorage(ctx, plain, key)
	if err != nil {
		return nil, nil, fmt.Errorf("transforming %q for storage: %w", key, err)
	}
	return plain, stored, nil
}

// decode turns a stored value into the object, stamped with rev, and
// returns the plain (untransformed) encoding too.
func (s *Store) decode(ctx context.Context, key string, value []byte, rev int64) (runtime.Object, []byte, error) {
	plain := value
	if s.cfg.Transformer != nil {
		var err error
		if plain, err = s.cfg.Transformer.TransformFromStorage(ctx, value, key); err != nil {
			return nil, nil, fmt.Errorf("transforming %q from storage: %w", key, err)
		}
	}
	obj, err := s.decodePlain(key, plain, rev)
	return obj, plain, err
}

func (s *Store) decodePlain(key string, plain []byte, rev int64) (runtime.Object, error) {
	obj, _, err := s.cfg.Codec.Decode(plain, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding %q: %w", key, err)
	}
	if err := storage.SetRevision(obj, uint64(rev)); err != nil {
		return nil, fmt.Errorf("decoding %q: %w", key, err)
	}
	return obj, nil
}

// Create stores obj under key if the key is free, in one transaction, and
// returns it as stored with the write's revision as resourceVersion.
func (s *Store) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if rv, err := storage.Revision(obj); err != nil {
		return nil, fmt.Errorf("create %q: %w", key, err)
	} else if rv != 0 {
		return nil, fmt.Errorf("create %q: resourceVersion must not be set: %w", key, storage.ErrInvalidObject)
	}
	plain, stored, err := s.encode(ctx, key, obj)
	if err != nil {
		return nil, err
	}
	ek := s.etcdKey(key)
	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	done := s.metrics.observe("create", key)
	resp, err := s.client.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)).
		Then(clientv3.OpPut(ek, string(stored))).
		Commit()
	done()
	if err != nil {
		return nil, s.fail(ctx, "create", key, err)
	}
	if !resp.Succeeded {
		s.saw(resp.Header.Revision)
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrExists)
	}
	s.wrote(resp.Header.Revision)
	return s.decodePlain(key, plain, resp.Header.Revision)
}

// Get returns the object under key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (runtime.Object, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	kv, err := s.getKV(ctx, key)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
	}
	obj, _, err := s.decode(ctx, key, kv.Value, kv.ModRevision)
	return obj, err
}

// getKV reads key's current value, nil when absent.
func (s *Store) getKV(ctx context.Context, key string) (*kv, error) {
	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	done := s.metrics.observe("get", key)
	resp, err := s.client.Get(rctx, s.etcdKey(key))
	done()
	if err != nil {
		return nil, s.fail(ctx, "get", key, err)
	}
	s.saw(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return &kv{Value: resp.Kvs[0].Value, ModRevision: resp.Kvs[0].ModRevision}, nil
}

// CurrentRevision returns etcd's current revision (a linearizable read):
// the revision of the latest write through any API server.
func (s *Store) CurrentRevision(ctx context.Context) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	rev, err := s.etcdRevision(ctx)
	if err != nil {
		return 0, err
	}
	return uint64(rev), nil
}

// etcdRevision reads etcd's current revision.
func (s *Store) etcdRevision(ctx context.Context) (int64, error) {
	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	done := s.metrics.observe("get", "")
	resp, err := s.client.Get(rctx, s.prefix+"/", clientv3.WithCountOnly())
	done()
	if err != nil {
		return 0, s.fail(ctx, "read revision", s.prefix, err)
	}
	s.saw(resp.Header.Revision)
	return resp.Header.Revision, nil
}

// Watch streams the changes under prefix from the store's watch cache; see
// the package documentation for how revisions written through other API
// servers are handled.
func (s *Store) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.watch(ctx, prefix, opts)
}

// WatchStats reports the watch cache's counters.
func (s *Store) WatchStats() watchcache.Stats { return s.ingest.cache().Stats() }

// Close stops the watch cache (ending every watch), the compactor and the
// client. Later calls fail with ErrClosed; Close is idempotent.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	s.ingest.cache().Close()
	if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcd store: closing client: %w", err)
	}
	return nil
}
