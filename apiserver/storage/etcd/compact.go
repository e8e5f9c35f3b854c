package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactRevKey is the key through which API servers sharing an etcd agree
// on who compacts, kube-apiserver's name for it: global, not under the
// prefix, because compaction is global too.
const compactRevKey = "compact_rev_key"

// Compact discards etcd's history before rev. Watches and continue tokens
// older than rev then fail with 410 Gone. Compacting to a revision already
// compacted is not an error.
func (s *Store) Compact(ctx context.Context, rev uint64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	done := s.metrics.observe("compact", "")
	_, err := s.client.Compact(rctx, int64(rev))
	done()
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.fail(ctx, "compact", strconv.FormatUint(rev, 10), err)
	}
	maxStore(&s.compacted, rev)
	return nil
}

// compactLoop compacts every interval to the revision seen one interval
// earlier, so that history of at least one interval is always kept.
func (s *Store) compactLoop(interval time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	var version, rev int64
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if version, rev, err = s.compactOnce(s.ctx, version, rev); err != nil && s.ctx.Err() == nil {
			s.o.logger.Warn("etcd compaction", "err", err)
		}
	}
}

// compactOnce is one round of the coordinated compaction: whoever moves
// compact_rev_key from the version it last saw compacts to the revision
// recorded in the previous round; the others learn the new version and
// wait for the next round. It returns the version and revision to use in
// the next round.
func (s *Store) compactOnce(ctx context.Context, version, rev int64) (int64, int64, error) {
	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	resp, err := s.client.Txn(rctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return version, rev, fmt.Errorf("updating %s: %w", compactRevKey, err)
	}
	cur := resp.Header.Revision
	if !resp.Succeeded {
		// Another API server compacted this round (or the key is gone):
		// adopt its version and start a new round from here.
		if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			return r.Kvs[0].Version, cur, nil
		}
		return 0, cur, nil
	}
	if rev > 0 {
		if err := s.Compact(ctx, uint64(rev)); err != nil {
			return version + 1, cur, err
		}
		s.o.logger.Debug("etcd compacted", "revision", rev)
	}
	return version + 1, cur, nil
}
