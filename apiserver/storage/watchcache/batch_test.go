package watchcache_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

func batcher(t *testing.T, c *watchcache.Cache, ctx context.Context, prefix string, opts storage.WatchOptions) watchcache.Batcher {
	t.Helper()
	w, err := c.Watch(ctx, prefix, opts)
	require.NoError(t, err)
	b, ok := w.(watchcache.Batcher)
	require.True(t, ok, "cache watches are Batchers")
	return b
}

// nextBatch calls NextBatch with a hang guard.
func nextBatch(t *testing.T, b watchcache.Batcher, limit int) ([]watch.Event, bool) {
	t.Helper()
	type res struct {
		evs []watch.Event
		ok  bool
	}
	ch := make(chan res, 1)
	go func() {
		evs, ok := b.NextBatch(nil, limit)
		ch <- res{evs, ok}
	}()
	select {
	case r := <-ch:
		return r.evs, r.ok
	case <-time.After(guard):
		require.FailNow(t, "NextBatch did not return")
	}
	return nil, false
}

func TestNextBatchReplayThenLiveInOrder(t *testing.T) {
	ctx := context.Background()
	const total = 3000
	c := newCache(t, 0, watchcache.WithCapacity(total), watchcache.WithWatcherBuffer(total))
	appendPods(t, c, "ns", 1, 500)
	var wg sync.WaitGroup
	wg.Go(func() {
		for rv := uint64(501); rv <= total; rv++ {
			if err := c.Append(podEvent(watch.Added, "ns", "p", rv, nil)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for _, tc := range []struct {
		from  uint64
		limit int
	}{{1, 1}, {100, 7}, {499, 64}, {700, 1000}} {
		for c.Revision() < tc.from {
			time.Sleep(time.Millisecond) // wait for the appender to reach from
		}
		b := batcher(t, c, ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: tc.from})
		want := tc.from + 1
		for want <= total {
			evs, ok := nextBatch(t, b, tc.limit)
			require.True(t, ok)
			require.NotEmpty(t, evs)
			require.LessOrEqual(t, len(evs), tc.limit)
			for _, ev := range evs {
				require.Equal(t, want, revOf(t, ev.Object), "from %d", tc.from)
				want++
			}
		}
		b.Stop()
		evs, ok := b.NextBatch(nil, 1)
		assert.False(t, ok, "a stopped watch stays ended")
		assert.Empty(t, evs)
	}
	wg.Wait()
	assert.Zero(t, c.Stats().Watchers)
}

func TestNextBatchBookmarks(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := newCache(t, 0, watchcache.WithClock(clk), watchcache.WithBookmarkInterval(time.Second))
	b := batcher(t, c, ctx, "/registry/pods/quiet/", storage.WatchOptions{
		Bookmarks: true,
		NewFunc:   func() runtime.Object { return &corev1.Pod{} },
	})
	defer b.Stop()
	appendPods(t, c, "busy", 1, 4)
	clk.Step(time.Second)
	evs, ok := nextBatch(t, b, 10)
	require.True(t, ok)
	require.Len(t, evs, 1)
	require.Equal(t, watch.Bookmark, evs[0].Type)
	assert.Equal(t, uint64(4), revOf(t, evs[0].Object))

	// No progress, no bookmark: the next thing returned is the event.
	clk.Step(time.Second)
	require.NoError(t, c.Append(podEvent(watch.Added, "quiet", "a", 5, nil)))
	evs, ok = nextBatch(t, b, 10)
	require.True(t, ok)
	require.Len(t, evs, 1)
	assert.Equal(t, watch.Added, evs[0].Type)
	assert.Equal(t, uint64(5), revOf(t, evs[0].Object))
}

func TestNextBatchSlowWatcherDropped(t *testing.T) {
	ctx := context.Background()
	c := newCache(t, 0, watchcache.WithWatcherBuffer(2), watchcache.WithLogger(slog.New(slog.DiscardHandler)))
	b := batcher(t, c, ctx, "/registry/pods/", storage.WatchOptions{})
	defer b.Stop()
	appendPods(t, c, "ns", 1, 10) // never blocks
	n := 0
	for {
		evs, ok := nextBatch(t, b, 100)
		n += len(evs)
		if !ok {
			break
		}
	}
	assert.LessOrEqual(t, n, 2, "at most the buffer")
	assert.Equal(t, uint64(1), c.Stats().Dropped)
	assert.Zero(t, c.Stats().Watchers)
}

func TestNextBatchEnds(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c := newCache(t, 0)
		b := batcher(t, c, ctx, "/", storage.WatchOptions{})
		cancel()
		_, ok := nextBatch(t, b, 1)
		assert.False(t, ok)
		assert.Zero(t, c.Stats().Watchers)
		b.Stop()
	})
	t.Run("stop while waiting", func(t *testing.T) {
		c := newCache(t, 0)
		b := batcher(t, c, context.Background(), "/", storage.WatchOptions{})
		time.AfterFunc(10*time.Millisecond, b.Stop)
		_, ok := nextBatch(t, b, 1)
		assert.False(t, ok)
		assert.Zero(t, c.Stats().Watchers)
	})
	t.Run("cache closed", func(t *testing.T) {
		c, err := watchcache.New(0)
		require.NoError(t, err)
		b := batcher(t, c, context.Background(), "/", storage.WatchOptions{})
		c.Close()
		_, ok := nextBatch(t, b, 1)
		assert.False(t, ok)
		b.Stop()
	})
	t.Run("read through ResultChan", func(t *testing.T) {
		c := newCache(t, 0)
		b := batcher(t, c, context.Background(), "/", storage.WatchOptions{})
		defer b.Stop()
		_ = b.ResultChan()
		_, ok := b.NextBatch(nil, 1)
		assert.False(t, ok, "a watch is read one way only")
	})
	t.Run("unread watch leaves with its context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c := newCache(t, 0)
		w, err := c.Watch(ctx, "/", storage.WatchOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, c.Stats().Watchers)
		cancel()
		require.Eventually(t, func() bool { return c.Stats().Watchers == 0 }, guard, time.Millisecond)
		waitClosed(t, w)
		w.Stop()
	})
}
