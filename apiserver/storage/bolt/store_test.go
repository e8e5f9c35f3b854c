package bolt_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
	"github.com/podkit/podkit/apiserver/storage/storagetest"
)

func codec() runtime.Codec { return scheme.StorageCodec(scheme.New()) }

func quiet() bolt.Option { return bolt.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))) }

func open(t testing.TB, path string, opts ...bolt.Option) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, codec(), append([]bolt.Option{quiet()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newStore(t testing.TB, opts ...bolt.Option) *bolt.Store {
	return open(t, filepath.Join(t.TempDir(), "podkit.db"), opts...)
}

func tuned(tune storagetest.Tuning) []bolt.Option {
	var opts []bolt.Option
	if tune.HistoryEvents > 0 {
		opts = append(opts, bolt.WithHistory(tune.HistoryEvents))
	}
	if tune.WatcherBuffer > 0 {
		opts = append(opts, bolt.WithWatcherBuffer(tune.WatcherBuffer))
	}
	if tune.BookmarkInterval > 0 {
		opts = append(opts, bolt.WithBookmarkInterval(tune.BookmarkInterval))
	}
	return opts
}

func TestConformance(t *testing.T) {
	storagetest.RunConformance(t,
		func(t *testing.T) storage.Store { return newStore(t) },
		storagetest.WithTuning(func(t *testing.T, tune storagetest.Tuning) storage.Store {
			return newStore(t, tuned(tune)...)
		}),
		storagetest.WithCanonicalObjects())
}

func BenchmarkStore(b *testing.B) {
	storagetest.RunBenchmarks(b, func(b *testing.B) storage.Store { return newStore(b) })
}

var pods = schema.GroupResource{Resource: "pods"}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestReopenKeepsStateAndRevision(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "podkit.db")
	s, err := bolt.Open(path, codec(), quiet())
	require.NoError(t, err)
	for _, n := range []string{"a", "b", "c"} {
		_, err := s.Create(ctx, storage.Key(pods, "ns", n), pod(n))
		require.NoError(t, err)
	}
	updated, err := s.Update(ctx, storage.Key(pods, "ns", "a"), func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		p.Spec.NodeName = "node-1"
		return p, nil
	})
	require.NoError(t, err)
	_, err = s.Delete(ctx, storage.Key(pods, "ns", "b"), nil)
	require.NoError(t, err)
	last, err := s.CurrentRevision(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = open(t, path, bolt.WithHistory(10))
	rv, err := s.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, last, rv, "the revision survives, even that of a delete")
	got, err := s.Get(ctx, storage.Key(pods, "ns", "a"))
	require.NoError(t, err)
	assert.Equal(t, "node-1", got.(*corev1.Pod).Spec.NodeName)
	assert.Equal(t, updated.(*corev1.Pod).ResourceVersion, got.(*corev1.Pod).ResourceVersion)
	_, err = s.Get(ctx, storage.Key(pods, "ns", "b"))
	require.ErrorIs(t, err, storage.ErrNotFound)
	res, err := s.List(ctx, storage.Key(pods, "ns", ""), storage.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, res.Items, 2)
	assert.Equal(t, last, res.ResourceVersion)

	// History starts at the revision found at open.
	_, err = s.Watch(ctx, storage.Key(pods, "ns", ""), storage.WatchOptions{ResourceVersion: last - 1})
	require.ErrorIs(t, err, storage.ErrGone)
	w, err := s.Watch(ctx, storage.Key(pods, "ns", ""), storage.WatchOptions{ResourceVersion: last})
	require.NoError(t, err)
	defer w.Stop()
	d, err := s.Create(ctx, storage.Key(pods, "ns", "d"), pod("d"))
	require.NoError(t, err)
	assert.Equal(t, last+1, mustRev(t, d), "revisions continue after a restart")
	ev := <-w.ResultChan()
	assert.Equal(t, "d", ev.Object.(*corev1.Pod).Name)
}

func mustRev(t testing.TB, obj runtime.Object) uint64 {
	rv, err := storage.Revision(obj)
	require.NoError(t, err)
	return rv
}

func TestObjectsAreReturnedAsStored(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	p := pod("a")
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Finalizers = []string{}
	out, err := s.Create(ctx, storage.Key(pods, "ns", "a"), p)
	require.NoError(t, err)
	op := out.(*corev1.Pod)
	assert.Empty(t, op.Kind, "decoded objects carry an empty TypeMeta")
	assert.Nil(t, op.Finalizers, "what a restart would decode")
	assert.Equal(t, "Pod", p.Kind, "the caller's object is left alone")
}

func TestUnencodableObjectIsRefused(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	_, err := s.Create(ctx, "/registry/odd/x", &unregistered{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	require.ErrorIs(t, err, storage.ErrInvalidObject)
	rv, err := s.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Zero(t, rv)
}

func TestSecondOpenInProcessFailsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podkit.db")
	open(t, path)
	_, err := bolt.Open(path, codec(), quiet(), bolt.WithLockTimeout(100*time.Millisecond))
	require.ErrorIs(t, err, bolt.ErrLocked)
	assert.Contains(t, err.Error(), path)
}

func TestCloseReleasesTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podkit.db")
	s, err := bolt.Open(path, codec(), quiet())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	open(t, path, bolt.WithLockTimeout(100*time.Millisecond))
}

func TestInvalidOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podkit.db")
	for name, opt := range map[string]bolt.Option{
		"zero lock timeout": bolt.WithLockTimeout(0),
		"zero batch":        bolt.WithMaxBatch(0),
		"negative history":  bolt.WithHistory(-1),
		"zero buffer":       bolt.WithWatcherBuffer(0),
		"zero TTL":          bolt.WithContinueTTL(0),
		"nil clock":         bolt.WithClock(nil),
	} {
		_, err := bolt.Open(path, codec(), opt)
		assert.Error(t, err, name)
	}
	_, err := bolt.Open(path, nil)
	assert.Error(t, err, "nil codec")
}

// unregistered is a type the storage scheme does not know.
type unregistered struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unregistered) DeepCopyObject() runtime.Object {
	c := *u
	c.ObjectMeta = *u.ObjectMeta.DeepCopy()
	return &c
}
