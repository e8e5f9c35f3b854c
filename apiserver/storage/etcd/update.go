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
	return s.compareAndSwap(ctx, "update", key, func(cur *kv, curObj runtime.Object, curPlain []byte) (casWrite, error) {
		out, err := tryUpdate(curObj)
		if err != nil {
			return casWrite{}, err
		}
		if out == nil {
			return casWrite{}, fmt.Errorf("update %q: tryUpdate returned no object: %w", key, storage.ErrInvalidObject)
		}
		rv, err := storage.Revision(out)
		if err != nil {
			return casWrite{}, fmt.Errorf("update %q: %w", key, err)
		}
		if rv != 0 && rv != uint64(cur.ModRevision) {
			return casWrite{}, fmt.Errorf("key %q: resourceVersion %d, stored %d: %w", key, rv, cur.ModRevision, storage.ErrConflict)
		}
		if err := storage.SetRevision(out, 0); err != nil {
			return casWrite{}, err
		}
		plain, stored, err := s.encode(ctx, key, out)
		if err != nil {
			return casWrite{}, err
		}
		if bytes.Equal(plain, curPlain) && !s.stale(cur.Value, key) {
			return casWrite{plain: curPlain}, nil
		}
		op := clientv3.OpPut(s.etcdKey(key), string(stored))
		return casWrite{op: &op, plain: plain}, nil
	})
}

// Delete removes the object under key once precondition accepts its
// current state, in a transaction on the mod revision read (retrying on
// the newer state when another writer won), and returns the last state
// stamped with the deletion's revision.
func (s *Store) Delete(ctx context.Context, key string, precondition func(cur runtime.Object) error) (runtime.Object, error) {
	return s.compareAndSwap(ctx, "delete", key, func(_ *kv, curObj runtime.Object, curPlain []byte) (casWrite, error) {
		if precondition != nil {
			if err := precondition(curObj); err != nil {
				return casWrite{}, err
			}
		}
		op := clientv3.OpDelete(s.etcdKey(key))
		return casWrite{op: &op, plain: curPlain}, nil
	})
}

// casWrite is what one attempt of compareAndSwap writes.
type casWrite struct {
	// op is the write, committed only while the key's mod revision is
	// still the one read; nil writes nothing.
	op *clientv3.Op
	// plain is the untransformed encoding of the object to return: stamped
	// with the commit's revision, or with the revision read when op is nil.
	plain []byte
}

// compareAndSwap reads key and runs attempt on its current state (the
// stored key-value, the object and its untransformed encoding) until the
// write attempt returns commits in a transaction on the mod revision read.
// When another writer won, the failed transaction's Else branch returns the
// newer state and attempt runs again on it. verb names the operation in
// metrics and errors.
func (s *Store) compareAndSwap(ctx context.Context, verb, key string, attempt func(cur *kv, curObj runtime.Object, curPlain []byte) (casWrite, error)) (runtime.Object, error) {
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
		w, err := attempt(cur, curObj, curPlain)
		if err != nil {
			return nil, err
		}
		if w.op == nil {
			return s.decodePlain(key, w.plain, cur.ModRevision)
		}
		rctx, cancel := s.reqCtx(ctx)
		done := s.metrics.observe(verb, key)
		resp, err := s.client.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(ek), "=", cur.ModRevision)).
			Then(*w.op).
			Else(clientv3.OpGet(ek)).
			Commit()
		done()
		cancel()
		if err != nil {
			return nil, s.fail(ctx, verb, key, err)
		}
		if resp.Succeeded {
			s.wrote(resp.Header.Revision)
			return s.decodePlain(key, w.plain, resp.Header.Revision)
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
