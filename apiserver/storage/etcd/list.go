package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// minPredicateBatch is the smallest batch a filtered, limited list reads
// from etcd at a time.
const minPredicateBatch = 100

// List reads the objects under prefix straight from etcd (a linearizable
// read), sorted by key. Every page of a paginated list is read at the
// revision of the first; once etcd has compacted that revision the
// continue token has expired (storage.ErrContinueExpired, 410 Gone).
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	start := prefix
	var rev int64
	if opts.Continue != "" {
		key, rv, err := storage.DecodeContinue(prefix, opts.Continue)
		if err != nil {
			return nil, err
		}
		start, rev = key, int64(rv)
	}
	batch := opts.Limit
	if opts.Predicate != nil && batch > 0 && batch < minPredicateBatch {
		batch = minPredicateBatch
	}
	end := clientv3.GetPrefixRangeEnd(s.etcdKey(prefix))
	res := &storage.ListResult{Items: []runtime.Object{}}
	for {
		getOpts := []clientv3.OpOption{clientv3.WithRange(end)}
		if batch > 0 {
			getOpts = append(getOpts, clientv3.WithLimit(batch))
		}
		if rev > 0 {
			getOpts = append(getOpts, clientv3.WithRev(rev))
		}
		rctx, cancel := s.reqCtx(ctx)
		done := s.metrics.observe("list", prefix)
		resp, err := s.client.Get(rctx, s.etcdKey(start), getOpts...)
		done()
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrCompacted):
			maxStore(&s.compacted, uint64(rev))
			return nil, fmt.Errorf("list %q at revision %d: %w", prefix, rev, storage.ErrContinueExpired)
		case errors.Is(err, rpctypes.ErrFutureRev):
			return nil, fmt.Errorf("list %q: revision %d is in the future: %w", prefix, rev, storage.ErrInvalidContinue)
		case err != nil:
			return nil, s.fail(ctx, "list", prefix, err)
		}
		s.saw(resp.Header.Revision)
		if rev == 0 {
			rev = resp.Header.Revision
		}
		res.ResourceVersion = uint64(rev)
		for i, kv := range resp.Kvs {
			key := s.storageKey(string(kv.Key))
			start = key + "\x00"
			obj, _, err := s.decode(ctx, key, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, err
			}
			if opts.Predicate != nil && !opts.Predicate(obj) {
				continue
			}
			res.Items = append(res.Items, obj)
			if opts.Limit <= 0 || int64(len(res.Items)) < opts.Limit {
				continue
			}
			if i < len(resp.Kvs)-1 || resp.More {
				if res.Continue, err = storage.EncodeContinue(prefix, start, uint64(rev)); err != nil {
					return nil, err
				}
				if opts.Predicate == nil {
					remaining := resp.Count - int64(i+1)
					res.RemainingItemCount = &remaining
				}
			}
			return res, nil
		}
		if !resp.More || batch == 0 {
			return res, nil
		}
	}
}
