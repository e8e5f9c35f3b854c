package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// WithCanonicalObjects declares that the store keeps objects in a
// canonical form of its own (the bolt store keeps what its codec decodes):
// CreateOwned and UpdateOwned then store an object built from the one
// handed over instead of that object itself, and the suite checks the
// stored object's content where it would check its identity.
func WithCanonicalObjects() Option {
	return func(s *suite) { s.canonical = true }
}

// ownedTests check storage.OwningWriter, for stores that implement it:
// the store keeps the object handed over (or its canonical form),
// tryUpdate reads the stored object itself, failures and no-ops leave the
// stored object as it was, and a retry starts from the newer object.
func (s *suite) ownedTests() []test {
	ctx := context.Background()
	owning := func(t *testing.T) (storage.Store, storage.OwningWriter, storage.SharedReader) {
		st := s.newStore(t)
		ow, ok := st.(storage.OwningWriter)
		if !ok {
			t.Skip("the store does not implement storage.OwningWriter")
		}
		sr, ok := st.(storage.SharedReader)
		require.True(t, ok, "a storage.OwningWriter must implement storage.SharedReader too")
		return st, ow, sr
	}
	shared := func(t *testing.T, sr storage.SharedReader, key string) *corev1.Pod {
		t.Helper()
		got, err := sr.GetShared(ctx, key)
		require.NoError(t, err)
		return got.(*corev1.Pod)
	}
	// storedPod creates pod ns/a, watches the namespace past its creation
	// and returns the watch, the pod's key and the stored pod itself.
	storedPod := func(t *testing.T, st storage.Store, sr storage.SharedReader) (watch.Interface, string, *corev1.Pod) {
		t.Helper()
		w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
		require.NoError(t, err)
		t.Cleanup(w.Stop)
		key := podKey("ns", "a")
		create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
		s.nextNonBookmark(t, w)
		return w, key, shared(t, sr, key)
	}
	// kept checks that out is what the store made of in: in itself, or
	// for a canonical store an object with in's content.
	kept := func(t *testing.T, in *corev1.Pod, out runtime.Object) {
		t.Helper()
		if !s.canonical {
			assert.Same(t, in, out, "the store keeps the object handed over")
			return
		}
		got := out.(*corev1.Pod)
		assert.Equal(t, in.Labels, got.Labels)
		assert.Equal(t, in.Spec, got.Spec)
	}
	// relabelled is a copy of cur with label k=v, built without touching cur.
	relabelled := func(cur runtime.Object, k, v string) *corev1.Pod {
		next := cur.(*corev1.Pod).DeepCopy()
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		next.Labels[k] = v
		return next
	}
	return []test{
		{"CreateOwnedKeepsTheObject", func(t *testing.T) {
			st, ow, sr := owning(t)
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			key := podKey("ns", "a")
			in := newPod("ns", "a", map[string]string{"app": "web"})
			out, err := ow.CreateOwned(ctx, key, in)
			require.NoError(t, err)
			kept(t, in, out)
			assert.Equal(t, currentRev(t, st), rev(t, out))
			assert.Same(t, out, shared(t, sr, key), "the result is the stored object")
			ev := s.next(t, w)
			assert.Equal(t, watch.Added, ev.Type)
			assert.Same(t, out, ev.Object, "watchers see the stored object")
		}},
		{"CreateOwnedFailuresKeepTheStoredObject", func(t *testing.T) {
			st, ow, sr := owning(t)
			key := podKey("ns", "a")
			first, err := ow.CreateOwned(ctx, key, newPod("ns", "a", map[string]string{"app": "web"}))
			require.NoError(t, err)
			before := first.DeepCopyObject()
			at := currentRev(t, st)

			_, err = ow.CreateOwned(ctx, key, newPod("ns", "a", map[string]string{"app": "intruder"}))
			require.ErrorIs(t, err, storage.ErrExists)
			withRV := newPod("ns", "b", nil)
			withRV.ResourceVersion = "7"
			_, err = ow.CreateOwned(ctx, podKey("ns", "b"), withRV)
			require.ErrorIs(t, err, storage.ErrInvalidObject)

			assert.Same(t, first, shared(t, sr, key))
			assert.Equal(t, before, first, "failed creates must not touch the stored object")
			assert.Equal(t, at, currentRev(t, st))
			_, err = st.Get(ctx, podKey("ns", "b"))
			require.ErrorIs(t, err, storage.ErrNotFound)
		}},
		{"UpdateOwnedHandsTheStoredObject", func(t *testing.T) {
			st, ow, sr := owning(t)
			w, key, old := storedPod(t, st, sr)
			snapshot := old.DeepCopy()
			var next *corev1.Pod
			out, err := ow.UpdateOwned(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
				assert.Same(t, old, cur, "tryUpdate gets the stored object itself")
				next = relabelled(cur, "app", "db")
				return next, nil
			})
			require.NoError(t, err)
			kept(t, next, out)
			assert.Equal(t, "db", out.(*corev1.Pod).Labels["app"])
			assert.Equal(t, currentRev(t, st), rev(t, out))
			assert.Greater(t, rev(t, out), rev(t, old))
			assert.Same(t, out, shared(t, sr, key))
			assert.Equal(t, snapshot, old, "the previous revision's object is left as it was")
			ev := s.nextNonBookmark(t, w)
			assert.Equal(t, watch.Modified, ev.Type)
			assert.Same(t, out, ev.Object, "watchers see the stored object")
		}},
		{"UpdateOwnedNoOps", func(t *testing.T) {
			st, ow, sr := owning(t)
			w, key, old := storedPod(t, st, sr)
			snapshot := old.DeepCopy()
			at := currentRev(t, st)
			for name, tryUpdate := range map[string]func(runtime.Object) (runtime.Object, error){
				"cur itself":    func(cur runtime.Object) (runtime.Object, error) { return cur, nil },
				"an equal copy": func(cur runtime.Object) (runtime.Object, error) { return cur.DeepCopyObject(), nil },
				"an equal copy without resourceVersion": func(cur runtime.Object) (runtime.Object, error) {
					next := cur.(*corev1.Pod).DeepCopy()
					next.ResourceVersion = ""
					return next, nil
				},
			} {
				out, err := ow.UpdateOwned(ctx, key, tryUpdate)
				require.NoError(t, err, name)
				assert.Same(t, old, out, "%s: a no-op returns the stored object", name)
				assert.Equal(t, at, currentRev(t, st), "%s: a no-op writes nothing", name)
			}
			assert.Same(t, old, shared(t, sr, key))
			assert.Equal(t, snapshot, old)
			s.expectQuiet(t, st, w, "ns", "marker")
		}},
		{"UpdateOwnedFailuresKeepTheStoredObject", func(t *testing.T) {
			st, ow, sr := owning(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			relabel(t, st, key, "app", "db") // the revision moves past the create's
			old := shared(t, sr, key)
			snapshot := old.DeepCopy()
			at := currentRev(t, st)

			boom := errors.New("admission said no")
			_, err := ow.UpdateOwned(ctx, key, func(runtime.Object) (runtime.Object, error) { return nil, boom })
			require.ErrorIs(t, err, boom, "tryUpdate's error comes back as it is")
			_, err = ow.UpdateOwned(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
				stale := relabelled(cur, "app", "stale")
				stale.ResourceVersion = "1"
				return stale, nil
			})
			require.ErrorIs(t, err, storage.ErrConflict)
			called := false
			_, err = ow.UpdateOwned(ctx, podKey("ns", "missing"), func(cur runtime.Object) (runtime.Object, error) {
				called = true
				return cur, nil
			})
			require.ErrorIs(t, err, storage.ErrNotFound)
			assert.False(t, called)

			assert.Same(t, old, shared(t, sr, key))
			assert.Equal(t, snapshot, old, "failed updates must not touch the stored object")
			assert.Equal(t, at, currentRev(t, st))
		}},
		{"UpdateOwnedRetriesOnTheNewerObject", func(t *testing.T) {
			st, ow, sr := owning(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", nil))
			first := shared(t, sr, key)
			snapshot := first.DeepCopy()
			var (
				seen    []string
				handed  []*corev1.Pod
				newer   runtime.Object
				curs    []runtime.Object
				lastOut *corev1.Pod
			)
			out, err := ow.UpdateOwned(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
				curs = append(curs, cur)
				seen = append(seen, cur.(*corev1.Pod).Labels["other"])
				if len(seen) == 1 {
					// Another writer lands between our read and our write.
					relabel(t, st, key, "other", "won")
					newer = shared(t, sr, key)
				}
				lastOut = relabelled(cur, "mine", "yes")
				handed = append(handed, lastOut)
				return lastOut, nil
			})
			require.NoError(t, err)
			require.Equal(t, []string{"", "won"}, seen, "tryUpdate must run again on the newer object")
			assert.Same(t, first, curs[0])
			assert.Same(t, newer, curs[1], "the retry gets the newer stored object itself")
			kept(t, lastOut, out)
			assert.NotSame(t, handed[0], out, "the first attempt's object is dropped")
			assert.Equal(t, map[string]string{"other": "won", "mine": "yes"}, out.(*corev1.Pod).Labels)
			assert.Equal(t, currentRev(t, st), rev(t, out))
			assert.Same(t, out, shared(t, sr, key))
			assert.Equal(t, snapshot, first, "the revisions tryUpdate read are left as they were")
		}},
	}
}
