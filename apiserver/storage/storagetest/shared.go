package storagetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// sharedTests check storage.SharedWriter, for stores that implement it:
// the shared results are what Create and Update would return, the input
// stays the caller's, and a watcher sees the very object handed back; then
// storage.OwningWriter (ownedTests).
func (s *suite) sharedTests() []test {
	ctx := context.Background()
	shared := func(t *testing.T) (storage.Store, storage.SharedWriter) {
		st := s.newStore(t)
		sw, ok := st.(storage.SharedWriter)
		if !ok {
			t.Skip("the store does not implement storage.SharedWriter")
		}
		return st, sw
	}
	return append([]test{
		{"CreateShared", func(t *testing.T) {
			st, sw := shared(t)
			in := newPod("ns", "a", map[string]string{"app": "web"})
			out, err := sw.CreateShared(ctx, podKey("ns", "a"), in)
			require.NoError(t, err)
			assert.Empty(t, in.ResourceVersion, "CreateShared must not change its argument")
			in.Labels["app"] = "changed-input"
			assert.Equal(t, rev(t, out), currentRev(t, st))
			got, err := st.Get(ctx, podKey("ns", "a"))
			require.NoError(t, err)
			assert.Equal(t, got.(*corev1.Pod).ObjectMeta, out.(*corev1.Pod).ObjectMeta)
			assert.Equal(t, "web", got.(*corev1.Pod).Labels["app"])

			_, err = sw.CreateShared(ctx, podKey("ns", "a"), newPod("ns", "a", nil))
			require.ErrorIs(t, err, storage.ErrExists)
		}},
		{"UpdateShared", func(t *testing.T) {
			st, sw := shared(t)
			key := podKey("ns", "a")
			first := create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			out, err := sw.UpdateShared(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
				cur.(*corev1.Pod).Labels["app"] = "db"
				return cur, nil
			})
			require.NoError(t, err)
			assert.Greater(t, rev(t, out), rev(t, first))
			assert.Equal(t, "db", out.(*corev1.Pod).Labels["app"])
			same, err := sw.UpdateShared(ctx, key, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
			require.NoError(t, err)
			assert.Equal(t, rev(t, out), rev(t, same), "a no-op update writes nothing")

			_, err = sw.UpdateShared(ctx, podKey("ns", "missing"), func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
			require.ErrorIs(t, err, storage.ErrNotFound)
		}},
		{"GetShared", func(t *testing.T) {
			st := s.newStore(t)
			sr, ok := st.(storage.SharedReader)
			if !ok {
				t.Skip("the store does not implement storage.SharedReader")
			}
			key := podKey("ns", "a")
			in := create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			got, err := sr.GetShared(ctx, key)
			require.NoError(t, err)
			assert.Equal(t, in.(*corev1.Pod).ObjectMeta, got.(*corev1.Pod).ObjectMeta)
			again, err := sr.GetShared(ctx, key)
			require.NoError(t, err)
			assert.Same(t, got, again, "GetShared hands back the stored object, not a copy")
			cp, err := st.Get(ctx, key)
			require.NoError(t, err)
			assert.NotSame(t, got, cp, "Get still copies")

			_, err = sr.GetShared(ctx, podKey("ns", "missing"))
			require.ErrorIs(t, err, storage.ErrNotFound)
		}},
		{"WatchersSeeTheSharedObject", func(t *testing.T) {
			st, sw := shared(t)
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			out, err := sw.CreateShared(ctx, podKey("ns", "a"), newPod("ns", "a", nil))
			require.NoError(t, err)
			ev := s.next(t, w)
			assert.Equal(t, watch.Added, ev.Type)
			assert.Equal(t, rev(t, out), rev(t, ev.Object))
		}},
	}, s.ownedTests()...)
}
