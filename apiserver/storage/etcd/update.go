package etcd

import (
	"bytes"
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// kv is the part of an etcd key-value a write compares against.
type kv struct {
	Value       []byte
	ModRevision int64
}

// elseKV extracts the key's value from the Else branch (a Get) of a failed
// transaction, nil when the key is gone.
func elseKV(resp *clientv3.TxnResponse) *kv {
	if len(resp.Responses) == 0 {
		return nil
	}
	r := resp.Responses[0].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return nil
	}
	return &kv{Value: r.Kvs[0].Value, ModRevision: r.Kvs[0].ModRevision}
}

// Update is storage.Store's compare-and-swap: tryUpdate runs on the
// current object, and the result is written only if the key's mod revision
// is still the one read; otherwise tryUpdate runs again on the newer
// object, which the failed transaction returned. A result equal to the
// stored object writes nothing.
func (s *Store) Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	cur, err := s.getKV(ctx, key)
	if err != nil {
		return nil, err
	}
	ek := s.etcdKey(key)
	for {
		if cur == nil {
			return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
		}
		if err := s.check(ctx); err != nil {
			return nil, err
		}
		curObj, curPlain, err := s.decode(ctx, key, cur.Value, cur.ModRevision)
		if err != nil {
			return nil, err
		}
		out, err := tryUpdate(curObj)
		if err != nil {
			return nil, err
		}
		if out == nil {
			return nil, fmt.Errorf("update %q: tryUpdate returned no object: %w", key, storage.ErrInvalidObject)
		}
		rv, err := storage.Revision(out)
		if err != nil {
			return nil, fmt.Errorf("update %q: %w", key, err)
		}
		if rv != 0 && rv != uint64(cur.ModRevision) {
			return nil, fmt.Errorf("key %q: resourceVersion %d, stored %d: %w", key, rv, cur.ModRevision, storage.ErrConflict)
		}
		if err := storage.SetRevision(out, 0); err != nil {
			return nil, err
		}
		plain, stored, err := s.encode(ctx, key, out)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(plain, curPlain) && !s.stale(cur.Value, key) {
			return s.decodePlain(key, curPlain, cur.ModRevision)
		}
		rctx, cancel := s.reqCtx(ctx)
		done := s.metrics.observe("update", key)
		resp, err := s.client.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(ek), "=", cur.ModRevision)).
			Then(clientv3.OpPut(ek, string(stored))).
			Else(clientv3.OpGet(ek)).
			Commit()
		done()
		cancel()
		if err != nil {
			return nil, s.fail(ctx, "update", key, err)
		}
		if resp.Succeeded {
			s.wrote(resp.Header.Revision)
			return s.decodePlain(key, plain, resp.Header.Revision)
		}
		s.saw(resp.Header.Revision)
		cur = elseKV(resp)
	}
}

// Delete removes the object under key once precondition accepts its
// current state, in a transaction on the mod revision read (retrying on
// the newer state when another writer won), and returns the last state
// stamped with the deletion's revision.
func (s *Store) Delete(ctx context.Context, key string, precondition func(cur runtime.Object) error) (runtime.Object, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	cur, err := s.getKV(ctx, key)
	if err != nil {
		return nil, err
	}
	ek := s.etcdKey(key)
	for {
		if cur == nil {
			return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
		}
		if err := s.check(ctx); err != nil {
			return nil, err
		}
		curObj, curPlain, err := s.decode(ctx, key, cur.Value, cur.ModRevision)
		if err != nil {
			return nil, err
		}
		if precondition != nil {
			if err := precondition(curObj); err != nil {
				return nil, err
			}
		}
		rctx, cancel := s.reqCtx(ctx)
		done := s.metrics.observe("delete", key)
		resp, err := s.client.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(ek), "=", cur.ModRevision)).
			Then(clientv3.OpDelete(ek)).
			Else(clientv3.OpGet(ek)).
			Commit()
		done()
		cancel()
		if err != nil {
			return nil, s.fail(ctx, "delete", key, err)
		}
		if resp.Succeeded {
			s.wrote(resp.Header.Revision)
			return s.decodePlain(key, curPlain, resp.Header.Revision)
		}
		s.saw(resp.Header.Revision)
		cur = elseKV(resp)
	}
}

// stale reports whether the stored value should be rewritten although the
// object did not change (see StaleChecker).
func (s *Store) stale(value []byte, key string) bool {
	sc, ok := s.cfg.Transformer.(StaleChecker)
	return ok && sc.Stale(value, key)
}
