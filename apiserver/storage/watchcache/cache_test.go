package watchcache_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

const guard = 30 * time.Second // hang guard, not a speed assertion

func podEvent(typ watch.EventType, ns, name string, rv uint64, labels map[string]string) watchcache.Event {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	_ = storage.SetRevision(p, rv)
	return watchcache.Event{Type: typ, Key: "/registry/pods/" + ns + "/" + name, Object: p, Revision: rv}
}

func newCache(t *testing.T, rev uint64, opts ...watchcache.Option) *watchcache.Cache {
	t.Helper()
	c, err := watchcache.New(rev, opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func appendPods(t *testing.T, c *watchcache.Cache, ns string, from, to uint64) {
	t.Helper()
	for rv := from; rv <= to; rv++ {
		require.NoError(t, c.Append(podEvent(watch.Added, ns, fmt.Sprintf("p%d", rv), rv, nil)))
	}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(guard):
		require.FailNow(t, "no event")
	}
	return watch.Event{}
}

func revOf(t *testing.T, obj runtime.Object) uint64 {
	t.Helper()
	rv, err := storage.Revision(obj)
	require.NoError(t, err)
	return rv
}

func waitClosed(t *testing.T, w watch.Interface) int {
	t.Helper()
	n := 0
	timeout := time.After(guard)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return n
			}
			n++
		case <-timeout:
			require.FailNow(t, "watch not closed")
		}
	}
}

func TestWindow(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		start    uint64
		capacity int
		appended uint64 // events start+1..appended
		from     uint64
		gone     bool
		tooLarge bool
		replay   []uint64
	}{
		{name: "empty history, from start", start: 5, capacity: 3, appended: 5, from: 5},
		{name: "before the start", start: 5, capacity: 3, appended: 5, from: 4, gone: true},
		{name: "zero means now", start: 5, capacity: 3, appended: 8, from: 0},
		{name: "all kept", start: 5, capacity: 3, appended: 8, from: 5, replay: []uint64{6, 7, 8}},
		{name: "wrapped: oldest minus one is fine", start: 0, capacity: 3, appended: 10, from: 7, replay: []uint64{8, 9, 10}},
		{name: "wrapped: older is gone", start: 0, capacity: 3, appended: 10, from: 6, gone: true},
		{name: "current is fine", start: 0, capacity: 3, appended: 10, from: 10},
		{name: "no history kept", start: 0, capacity: 0, appended: 10, from: 10},
		{name: "no history kept, past", start: 0, capacity: 0, appended: 10, from: 9, gone: true},
		{name: "future", start: 0, capacity: 3, appended: 10, from: 11, tooLarge: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, tc.start, watchcache.WithCapacity(tc.capacity))
			appendPods(t, c, "ns", tc.start+1, tc.appended)
			w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: tc.from})
			switch {
			case tc.gone:
				require.ErrorIs(t, err, storage.ErrGone)
				assert.Contains(t, err.Error(), "too old resource version")
				return
			case tc.tooLarge:
				require.ErrorIs(t, err, storage.ErrTooLargeResourceVersion)
				return
			}
			require.NoError(t, err)
			defer w.Stop()
			var got []uint64
			for range tc.replay {
				got = append(got, revOf(t, next(t, w).Object))
			}
			assert.Equal(t, tc.replay, got)
			// Then live events, without a gap.
			require.NoError(t, c.Append(podEvent(watch.Added, "ns", "live", tc.appended+1, nil)))
			assert.Equal(t, tc.appended+1, revOf(t, next(t, w).Object))
		})
	}
}

func TestAppendRejectsOldRevisions(t *testing.T) {
	c := newCache(t, 10)
	require.Error(t, c.Append(podEvent(watch.Added, "ns", "a", 10, nil)))
	require.NoError(t, c.Append(podEvent(watch.Added, "ns", "a", 12, nil)), "gaps are fine (etcd revisions are global)")
	require.Error(t, c.Append(podEvent(watch.Added, "ns", "b", 11, nil)))
	assert.Equal(t, uint64(12), c.Revision())
}

func TestMaxAge(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := newCache(t, 0, watchcache.WithMaxAge(time.Minute), watchcache.WithClock(clk))
	appendPods(t, c, "ns", 1, 3)
	clk.Step(30 * time.Second)
	appendPods(t, c, "ns", 4, 5)
	w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: 1})
	require.NoError(t, err)
	w.Stop()

	clk.Step(45 * time.Second) // events 1-3 are 75s old, 4-5 are 45s old
	_, err = c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: 2})
	require.ErrorIs(t, err, storage.ErrGone)
	w, err = c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: 3})
	require.NoError(t, err)
	assert.Equal(t, uint64(4), revOf(t, next(t, w).Object))
	w.Stop()

	clk.Step(time.Hour)
	st := c.Stats()
	assert.Zero(t, st.Events)
	assert.Equal(t, uint64(5), st.Floor)
	w, err = c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: 5})
	require.NoError(t, err, "the current revision is always fine")
	w.Stop()
}

func TestPrefixAndSharedObjects(t *testing.T) {
	ctx := context.Background()
	c := newCache(t, 0)
	a, err := c.Watch(ctx, "/registry/pods/a/", storage.WatchOptions{})
	require.NoError(t, err)
	defer a.Stop()
	b, err := c.Watch(ctx, "/registry/pods/a/", storage.WatchOptions{})
	require.NoError(t, err)
	defer b.Stop()
	require.NoError(t, c.Append(podEvent(watch.Added, "ab", "x", 1, nil)))
	require.NoError(t, c.Append(podEvent(watch.Added, "a", "x", 2, nil)))
	ea, eb := next(t, a), next(t, b)
	assert.Equal(t, uint64(2), revOf(t, ea.Object))
	assert.Same(t, ea.Object, eb.Object, "objects are shared between watchers (read-only)")
}

func TestReplayThenLiveUnderConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	const total = 3000
	c := newCache(t, 0, watchcache.WithCapacity(total), watchcache.WithWatcherBuffer(total))
	appendPods(t, c, "ns", 1, 500)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for rv := uint64(501); rv <= total; rv++ {
			if err := c.Append(podEvent(watch.Added, "ns", "p", rv, nil)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// Watches starting at various points while appends go on.
	for _, from := range []uint64{1, 100, 499, 700} {
		for c.Revision() < from {
			time.Sleep(time.Millisecond) // wait for the appender to reach from
		}
		w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: from})
		require.NoError(t, err)
		for want := from + 1; want <= total; want++ {
			require.Equal(t, want, revOf(t, next(t, w).Object), "from %d", from)
		}
		w.Stop()
	}
	wg.Wait()
}

func TestSlowWatcherDropped(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	c := newCache(t, 0, watchcache.WithWatcherBuffer(2), watchcache.WithLogger(logger))
	slow, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	defer slow.Stop()
	other, err := c.Watch(ctx, "/registry/configmaps/", storage.WatchOptions{})
	require.NoError(t, err)
	defer other.Stop()
	appendPods(t, c, "ns", 1, 10) // never blocks
	n := waitClosed(t, slow)
	assert.LessOrEqual(t, n, 3, "buffer plus the event in flight")
	st := c.Stats()
	assert.Equal(t, uint64(1), st.Dropped)
	assert.Equal(t, 1, st.Watchers, "the other watcher is untouched")
	mu.Lock()
	assert.Contains(t, logs.String(), "too slow")
	mu.Unlock()
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestStoppedWatcherIsNotCountedAsDropped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := newCache(t, 0, watchcache.WithWatcherBuffer(1))
	w, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	cancel()
	waitClosed(t, w)
	appendPods(t, c, "ns", 1, 5)
	assert.Zero(t, c.Stats().Dropped)
	assert.Zero(t, c.Stats().Watchers)
}

func TestBookmarks(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := newCache(t, 0, watchcache.WithClock(clk), watchcache.WithBookmarkInterval(time.Second))
	w, err := c.Watch(ctx, "/registry/pods/quiet/", storage.WatchOptions{
		Bookmarks: true,
		NewFunc:   func() runtime.Object { return &corev1.Pod{} },
	})
	require.NoError(t, err)
	defer w.Stop()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond) // the watcher's ticker is not armed yet
	}
	appendPods(t, c, "busy", 1, 4)
	clk.Step(time.Second)
	ev := next(t, w)
	require.Equal(t, watch.Bookmark, ev.Type)
	assert.Equal(t, uint64(4), revOf(t, ev.Object))

	// No progress, no bookmark: the next thing received is the event.
	clk.Step(time.Second)
	require.NoError(t, c.Append(podEvent(watch.Added, "quiet", "a", 5, nil)))
	ev = next(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, uint64(5), revOf(t, ev.Object))
}

func TestCloseEndsWatches(t *testing.T) {
	ctx := context.Background()
	c, err := watchcache.New(0)
	require.NoError(t, err)
	w, err := c.Watch(ctx, "/", storage.WatchOptions{})
	require.NoError(t, err)
	c.Close()
	waitClosed(t, w)
	w.Stop()
	c.Close()
	require.ErrorIs(t, c.Append(podEvent(watch.Added, "ns", "a", 1, nil)), storage.ErrClosed)
	_, err = c.Watch(ctx, "/", storage.WatchOptions{})
	require.ErrorIs(t, err, storage.ErrClosed)
}

func TestInvalidOptions(t *testing.T) {
	for name, opt := range map[string]watchcache.Option{
		"negative capacity": watchcache.WithCapacity(-1),
		"negative age":      watchcache.WithMaxAge(-time.Second),
		"zero buffer":       watchcache.WithWatcherBuffer(0),
		"zero interval":     watchcache.WithBookmarkInterval(0),
		"nil clock":         watchcache.WithClock(nil),
		"nil logger":        watchcache.WithLogger(nil),
	} {
		_, err := watchcache.New(0, opt)
		assert.Error(t, err, name)
	}
}
