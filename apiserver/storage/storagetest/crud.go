package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

func (s *suite) crudTests() []test {
	ctx := context.Background()
	return []test{
		{"CreateThenGet", func(t *testing.T) {
			st := s.newStore(t)
			in := newPod("ns", "a", map[string]string{"app": "web"})
			out := create(t, st, podKey("ns", "a"), in)
			assert.Empty(t, in.ResourceVersion, "Create must not change its argument")
			rv := rev(t, out)
			assert.NotZero(t, rv)
			assert.Equal(t, rv, currentRev(t, st))
			p := out.(*corev1.Pod)
			assert.Equal(t, "a", p.Name)
			assert.Equal(t, in.Spec, p.Spec)

			got, err := st.Get(ctx, podKey("ns", "a"))
			require.NoError(t, err)
			gp := got.(*corev1.Pod)
			assert.Equal(t, p.ObjectMeta, gp.ObjectMeta)
			assert.Equal(t, p.Spec, gp.Spec)
		}},
		{"CopiesInAndOut", func(t *testing.T) {
			st := s.newStore(t)
			in := newPod("ns", "a", map[string]string{"app": "web"})
			out := create(t, st, podKey("ns", "a"), in).(*corev1.Pod)
			in.Labels["app"] = "changed-input"
			out.Labels["app"] = "changed-output"
			got, err := st.Get(ctx, podKey("ns", "a"))
			require.NoError(t, err)
			got.(*corev1.Pod).Labels["app"] = "changed-get"
			again, err := st.Get(ctx, podKey("ns", "a"))
			require.NoError(t, err)
			assert.Equal(t, "web", again.(*corev1.Pod).Labels["app"])
		}},
		{"CreateExisting", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			first := create(t, st, key, newPod("ns", "a", nil))
			_, err := st.Create(ctx, key, newPod("ns", "a", map[string]string{"x": "y"}))
			require.ErrorIs(t, err, storage.ErrExists)
			assert.Contains(t, err.Error(), key)
			assert.Equal(t, rev(t, first), currentRev(t, st), "a failed create must not use a revision")
		}},
		{"CreateWithResourceVersion", func(t *testing.T) {
			st := s.newStore(t)
			p := newPod("ns", "a", nil)
			p.ResourceVersion = "7"
			_, err := st.Create(ctx, podKey("ns", "a"), p)
			require.ErrorIs(t, err, storage.ErrInvalidObject)
			_, err = st.Get(ctx, podKey("ns", "a"))
			require.ErrorIs(t, err, storage.ErrNotFound)
		}},
		{"GetMissing", func(t *testing.T) {
			st := s.newStore(t)
			_, err := st.Get(ctx, podKey("ns", "missing"))
			require.ErrorIs(t, err, storage.ErrNotFound)
			assert.Contains(t, err.Error(), podKey("ns", "missing"))
		}},
		{"Exists", func(t *testing.T) {
			st := s.newStore(t)
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			for _, tc := range []struct {
				key    string
				exists bool
			}{
				{podKey("ns", "a"), true},
				{podKey("ns", "b"), false},
				{podKey("other", "a"), false},
				{cmKey("ns", "a"), false},
			} {
				_, err := st.Get(ctx, tc.key)
				if tc.exists {
					assert.NoError(t, err, tc.key)
				} else {
					assert.ErrorIs(t, err, storage.ErrNotFound, tc.key)
				}
			}
		}},
		{"RevisionsStrictlyIncreasingAndStamped", func(t *testing.T) {
			st := s.newStore(t)
			last := currentRev(t, st)
			check := func(what string, obj runtime.Object) {
				t.Helper()
				rv := rev(t, obj)
				assert.Greater(t, rv, last, what)
				assert.Equal(t, rv, currentRev(t, st), "%s: CurrentRevision must be the latest write", what)
				last = rv
			}
			for _, name := range []string{"a", "b", "c"} {
				check("create "+name, create(t, st, podKey("ns", name), newPod("ns", name, nil)))
			}
			check("update a", relabel(t, st, podKey("ns", "a"), "k", "1"))
			check("create cm", create(t, st, cmKey("ns", "x"), newConfigMap("ns", "x", nil)))
			gone, err := st.Delete(ctx, podKey("ns", "b"), nil)
			require.NoError(t, err)
			check("delete b", gone)
			check("update c", relabel(t, st, podKey("ns", "c"), "k", "2"))
			got, err := st.Get(ctx, podKey("ns", "a"))
			require.NoError(t, err)
			assert.Less(t, rev(t, got), last, "an object keeps the revision of its last write")
		}},
	}
}

func (s *suite) updateTests() []test {
	ctx := context.Background()
	return []test{
		{"Update", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			created := create(t, st, key, newPod("ns", "a", nil))
			var seen runtime.Object
			out, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
				seen = cur.DeepCopyObject()
				p := cur.(*corev1.Pod)
				p.Labels = map[string]string{"app": "web"}
				return p, nil
			})
			require.NoError(t, err)
			assert.Equal(t, rev(t, created), rev(t, seen), "tryUpdate gets the current object with its revision")
			assert.Greater(t, rev(t, out), rev(t, created))
			got, err := st.Get(ctx, key)
			require.NoError(t, err)
			assert.Equal(t, "web", got.(*corev1.Pod).Labels["app"])
			assert.Equal(t, rev(t, out), rev(t, got))
		}},
		{"StaleResourceVersionConflicts", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			created := create(t, st, key, newPod("ns", "a", nil)).(*corev1.Pod)
			relabel(t, st, key, "k", "1")
			before := currentRev(t, st)
			// A PUT of an object read before the last write.
			stale := created.DeepCopy()
			stale.Labels = map[string]string{"k": "stale"}
			calls := 0
			_, err := st.Update(ctx, key, func(runtime.Object) (runtime.Object, error) {
				calls++
				return stale.DeepCopy(), nil
			})
			require.ErrorIs(t, err, storage.ErrConflict)
			assert.Contains(t, err.Error(), key)
			assert.Equal(t, 1, calls)
			assert.Equal(t, before, currentRev(t, st))
			got, err := st.Get(ctx, key)
			require.NoError(t, err)
			assert.Equal(t, "1", got.(*corev1.Pod).Labels["k"])
		}},
		{"MatchingResourceVersionWrites", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			created := create(t, st, key, newPod("ns", "a", nil)).(*corev1.Pod)
			put := created.DeepCopy()
			put.Labels = map[string]string{"k": "put"}
			out, err := st.Update(ctx, key, func(runtime.Object) (runtime.Object, error) { return put, nil })
			require.NoError(t, err)
			assert.Equal(t, "put", out.(*corev1.Pod).Labels["k"])
			assert.Greater(t, rev(t, out), rev(t, created))
		}},
		{"EmptyResourceVersionIsUnconditional", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", nil))
			relabel(t, st, key, "k", "1")
			put := newPod("ns", "a", map[string]string{"k": "forced"})
			out, err := st.Update(ctx, key, func(runtime.Object) (runtime.Object, error) { return put, nil })
			require.NoError(t, err)
			assert.Equal(t, "forced", out.(*corev1.Pod).Labels["k"])
			assert.Equal(t, currentRev(t, st), rev(t, out))
		}},
		{"RetriesWhenAConcurrentWriterWins", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", nil))
			var seen []string
			out, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
				p := cur.(*corev1.Pod)
				seen = append(seen, p.Labels["other"])
				if len(seen) == 1 {
					// Another writer lands between our read and our write.
					relabel(t, st, key, "other", "won")
				}
				if p.Labels == nil {
					p.Labels = map[string]string{}
				}
				p.Labels["mine"] = "yes"
				return p, nil
			})
			require.NoError(t, err)
			assert.Equal(t, []string{"", "won"}, seen, "tryUpdate must run again on the newer object")
			p := out.(*corev1.Pod)
			assert.Equal(t, map[string]string{"other": "won", "mine": "yes"}, p.Labels)
			assert.Equal(t, currentRev(t, st), rev(t, out))
		}},
		{"TryUpdateErrorIsReturnedAsIs", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", nil))
			before := currentRev(t, st)
			boom := errors.New("admission said no")
			_, err := st.Update(ctx, key, func(runtime.Object) (runtime.Object, error) { return nil, boom })
			require.ErrorIs(t, err, boom)
			assert.Equal(t, before, currentRev(t, st))
		}},
		{"UpdateMissing", func(t *testing.T) {
			st := s.newStore(t)
			called := false
			_, err := st.Update(ctx, podKey("ns", "missing"), func(cur runtime.Object) (runtime.Object, error) {
				called = true
				return cur, nil
			})
			require.ErrorIs(t, err, storage.ErrNotFound)
			assert.False(t, called)
		}},
		{"NoOpUpdateKeepsTheObject", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			created := create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			// Whether a no-op writes is the backend's choice; the result
			// must be the object, at the store's revision or its own.
			out, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
			require.NoError(t, err)
			assert.GreaterOrEqual(t, rev(t, out), rev(t, created))
			got, err := st.Get(ctx, key)
			require.NoError(t, err)
			assert.Equal(t, rev(t, out), rev(t, got))
			assert.Equal(t, "web", got.(*corev1.Pod).Labels["app"])
		}},
	}
}

func (s *suite) deleteTests() []test {
	ctx := context.Background()
	return []test{
		{"Delete", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			created := create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			gone, err := st.Delete(ctx, key, nil)
			require.NoError(t, err)
			assert.Greater(t, rev(t, gone), rev(t, created), "the deleted object carries the deletion's revision")
			assert.Equal(t, currentRev(t, st), rev(t, gone))
			assert.Equal(t, "web", gone.(*corev1.Pod).Labels["app"])
			_, err = st.Get(ctx, key)
			require.ErrorIs(t, err, storage.ErrNotFound)
			// The key can be used again.
			again := create(t, st, key, newPod("ns", "a", nil))
			assert.Greater(t, rev(t, again), rev(t, gone))
		}},
		{"PreconditionRejects", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", nil))
			before := currentRev(t, st)
			wrongUID := errors.New("precondition failed: UID mismatch")
			_, err := st.Delete(ctx, key, func(cur runtime.Object) error {
				if cur.(*corev1.Pod).UID != "someone-else" {
					return wrongUID
				}
				return nil
			})
			require.ErrorIs(t, err, wrongUID)
			assert.Equal(t, before, currentRev(t, st))
			_, err = st.Get(ctx, key)
			require.NoError(t, err)
		}},
		{"PreconditionAccepts", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			created := create(t, st, key, newPod("ns", "a", nil))
			var seen runtime.Object
			_, err := st.Delete(ctx, key, func(cur runtime.Object) error {
				seen = cur
				return nil
			})
			require.NoError(t, err)
			require.NotNil(t, seen)
			assert.Equal(t, created.(*corev1.Pod).UID, seen.(*corev1.Pod).UID)
			assert.Equal(t, rev(t, created), rev(t, seen), "the precondition sees the current object")
		}},
		{"PreconditionSeesConcurrentWrite", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", nil))
			var seen []string
			_, err := st.Delete(ctx, key, func(cur runtime.Object) error {
				seen = append(seen, cur.(*corev1.Pod).Labels["k"])
				if len(seen) == 1 {
					relabel(t, st, key, "k", "late")
				}
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, []string{"", "late"}, seen, "the precondition must run again on the newer object")
		}},
		{"DeleteMissing", func(t *testing.T) {
			st := s.newStore(t)
			before := currentRev(t, st)
			_, err := st.Delete(ctx, podKey("ns", "missing"), nil)
			require.ErrorIs(t, err, storage.ErrNotFound)
			assert.Contains(t, err.Error(), podKey("ns", "missing"))
			assert.Equal(t, before, currentRev(t, st))
		}},
	}
}
