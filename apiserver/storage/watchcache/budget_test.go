package watchcache_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// A reader that falls behind for a moment (here: it has not started
// reading while a burst of writes overflows its buffer) is waited for
// within the dispatch budget and gets every event, in order, instead of
// being dropped.
func TestStalledWatcherCatchesUpWithinTheBudget(t *testing.T) {
	ctx := context.Background()
	c := newCache(t, 0, watchcache.WithWatcherBuffer(2), watchcache.WithDispatchBudget(guard))
	w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	const n = 20
	appended := make(chan error, 1)
	go func() {
		for rv := uint64(1); rv <= n; rv++ {
			if err := c.Append(podEvent(watch.Added, "ns", fmt.Sprintf("p%d", rv), rv, nil)); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	for rv := uint64(1); rv <= n; rv++ {
		assert.Equal(t, rv, revOf(t, next(t, w).Object))
	}
	require.NoError(t, <-appended)
	assert.Zero(t, c.Stats().Dropped)
	assert.Equal(t, 1, c.Stats().Watchers)
}

// Without a budget, a full buffer drops the watcher at once; with one, a
// reader that never reads is still dropped once the budget is spent, and
// a watcher stopped meanwhile releases the writer at once.
func TestDispatchBudgetBoundsTheWait(t *testing.T) {
	for name, budget := range map[string]time.Duration{"none": 0, "small": 20 * time.Millisecond} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := newCache(t, 0, watchcache.WithWatcherBuffer(1), watchcache.WithDispatchBudget(budget),
				watchcache.WithLogger(slog.New(slog.DiscardHandler)))
			w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			appendPods(t, c, "ns", 1, 10) // returns: the wait is bounded
			assert.Equal(t, uint64(1), c.Stats().Dropped)
			assert.LessOrEqual(t, waitClosed(t, w), 1)
		})
	}
	t.Run("stopped while waited for", func(t *testing.T) {
		ctx := context.Background()
		c := newCache(t, 0, watchcache.WithWatcherBuffer(1), watchcache.WithDispatchBudget(time.Hour))
		w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
		require.NoError(t, err)
		appendPods(t, c, "ns", 1, 1) // fills the buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			appendPods(t, c, "ns", 2, 2) // waits for room
		}()
		w.Stop()
		select {
		case <-done:
		case <-time.After(guard):
			require.FailNow(t, "the writer still waits for a stopped watcher")
		}
		assert.Zero(t, c.Stats().Dropped, "a stopped watcher is not a slow one")
	})
}

func TestInvalidDispatchBudget(t *testing.T) {
	_, err := watchcache.New(0, watchcache.WithDispatchBudget(-time.Second))
	assert.Error(t, err)
}

// By default a watcher may have as many events pending as the history
// holds, without being dropped: a reader descheduled during a burst of
// thousands of writes catches up.
func TestDefaultBufferHoldsABurst(t *testing.T) {
	ctx := context.Background()
	c := newCache(t, 0, watchcache.WithDispatchBudget(0))
	w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	const burst = 5000
	appendPods(t, c, "ns", 1, burst)
	for rv := uint64(1); rv <= burst; rv++ {
		assert.Equal(t, rv, revOf(t, next(t, w).Object))
	}
	assert.Zero(t, c.Stats().Dropped)
}
