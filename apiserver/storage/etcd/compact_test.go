package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

// TestCompactorsCoordinate runs two stores' compactors on one etcd: etcd
// gets compacted, one interval behind, and the rounds are shared through
// compact_rev_key.
func TestCompactorsCoordinate(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	a := openStore(t, c, etcd.Config{}, etcd.WithCompactionInterval(300*time.Millisecond))
	openStore(t, c, etcd.Config{}, etcd.WithCompactionInterval(300*time.Millisecond))
	first, err := a.Create(ctx, storage.Key(podsGR, "ns", "a"), pod("ns", "a"))
	require.NoError(t, err)
	rv, err := storage.Revision(first)
	require.NoError(t, err)
	cli := c.Client(t)
	require.Eventually(t, func() bool {
		_, err := cli.Get(ctx, "anything", clientv3.WithRev(int64(rv)))
		return errors.Is(err, rpctypes.ErrCompacted)
	}, 60*time.Second, 50*time.Millisecond, "etcd compacted past revision %d", rv)
	resp, err := cli.Get(ctx, "compact_rev_key")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.GreaterOrEqual(t, resp.Kvs[0].Version, int64(2), "rounds are recorded in compact_rev_key")

	// The store still serves: the current revision is never compacted.
	_, err = a.Get(ctx, storage.Key(podsGR, "ns", "a"))
	require.NoError(t, err)
}
