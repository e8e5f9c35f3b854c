package memory_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/apiserver/storage/storagetest"
)

func newStore(t testing.TB, opts ...memory.Option) *memory.Store {
	quiet := memory.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := memory.New(append([]memory.Option{quiet}, opts...)...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tuned(tune storagetest.Tuning) []memory.Option {
	var opts []memory.Option
	if tune.HistoryEvents > 0 {
		opts = append(opts, memory.WithHistory(tune.HistoryEvents))
	}
	if tune.WatcherBuffer > 0 {
		opts = append(opts, memory.WithWatcherBuffer(tune.WatcherBuffer))
	}
	if tune.BookmarkInterval > 0 {
		opts = append(opts, memory.WithBookmarkInterval(tune.BookmarkInterval))
	}
	return opts
}

func TestConformance(t *testing.T) {
	storagetest.RunConformance(t,
		func(t *testing.T) storage.Store { return newStore(t) },
		storagetest.WithTuning(func(t *testing.T, tune storagetest.Tuning) storage.Store {
			return newStore(t, tuned(tune)...)
		}))
}

var pods = schema.GroupResource{Resource: "pods"}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}}}
}

func TestNoOpUpdateWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := storage.Key(pods, "ns", "a")
	created, err := s.Create(ctx, key, pod("a"))
	require.NoError(t, err)
	w, err := s.Watch(ctx, storage.Key(pods, "ns", ""), storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()

	for name, try := range map[string]func(runtime.Object) (runtime.Object, error){
		"same object": func(cur runtime.Object) (runtime.Object, error) { return cur, nil },
		"type meta only": func(cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			p.APIVersion, p.Kind = "v1", "Pod"
			return p, nil
		},
		"resourceVersion cleared": func(cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			p.ResourceVersion = ""
			return p, nil
		},
	} {
		out, err := s.Update(ctx, key, try)
		require.NoError(t, err, name)
		assert.Equal(t, created.(*corev1.Pod).ResourceVersion, out.(*corev1.Pod).ResourceVersion, name)
	}
	rv, err := s.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, created.(*corev1.Pod).ResourceVersion, storageRV(rv))
	assert.Equal(t, 0, len(w.ResultChan()), "no event for a no-op update")
	assert.Equal(t, 1, s.WatchStats().Watchers)
}

func storageRV(rv uint64) string {
	p := &corev1.Pod{}
	_ = storage.SetRevision(p, rv)
	return p.ResourceVersion
}

func TestContinueExpires(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := newStore(t, memory.WithClock(clk), memory.WithContinueTTL(time.Minute))
	for _, n := range []string{"a", "b", "c"} {
		_, err := s.Create(ctx, storage.Key(pods, "ns", n), pod(n))
		require.NoError(t, err)
	}
	prefix := storage.Key(pods, "ns", "")
	first, err := s.List(ctx, prefix, storage.ListOptions{Limit: 1})
	require.NoError(t, err)

	// Unchanged store: the token is served from the current state even
	// after the snapshot expired.
	clk.Step(2 * time.Minute)
	_, err = s.List(ctx, prefix, storage.ListOptions{Limit: 1, Continue: first.Continue})
	require.NoError(t, err)

	// After a write the snapshot is needed: used within the TTL it lives,
	// past it the token has expired.
	page, err := s.List(ctx, prefix, storage.ListOptions{Limit: 1})
	require.NoError(t, err)
	_, err = s.Create(ctx, storage.Key(pods, "ns", "d"), pod("d"))
	require.NoError(t, err)
	clk.Step(30 * time.Second)
	second, err := s.List(ctx, prefix, storage.ListOptions{Limit: 1, Continue: page.Continue})
	require.NoError(t, err)
	assert.Equal(t, page.ResourceVersion, second.ResourceVersion)
	clk.Step(2 * time.Minute)
	_, err = s.List(ctx, prefix, storage.ListOptions{Limit: 1, Continue: second.Continue})
	require.ErrorIs(t, err, storage.ErrContinueExpired)
	require.ErrorIs(t, err, storage.ErrInvalidContinue)
}

func TestInvalidOptionsPanic(t *testing.T) {
	for name, opt := range map[string]memory.Option{
		"negative history": memory.WithHistory(-1),
		"zero buffer":      memory.WithWatcherBuffer(0),
		"zero bookmarks":   memory.WithBookmarkInterval(0),
		"zero TTL":         memory.WithContinueTTL(0),
		"nil clock":        memory.WithClock(nil),
		"nil logger":       memory.WithLogger(nil),
	} {
		assert.Panics(t, func() { memory.New(opt) }, name)
	}
}

func TestDroppedWatchersAreCounted(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memory.WithWatcherBuffer(1))
	w, err := s.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	for _, n := range []string{"a", "b", "c", "d"} {
		_, err := s.Create(ctx, storage.Key(pods, "ns", n), pod(n))
		require.NoError(t, err)
	}
	for range w.ResultChan() {
	}
	assert.Equal(t, uint64(1), s.WatchStats().Dropped)
	assert.Equal(t, 0, s.WatchStats().Watchers)
}

func BenchmarkStore(b *testing.B) {
	storagetest.RunBenchmarks(b, func(b *testing.B) storage.Store { return newStore(b) })
}
