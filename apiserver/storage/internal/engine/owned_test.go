package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestOwnedWritesSkipTheCopy: CreateOwned and UpdateOwned store the
// object handed over, or give it to Canonical as it is (which may keep it
// or build its own), through the inline and the group commit alike, while
// CreateShared still stores a copy.
func TestOwnedWritesSkipTheCopy(t *testing.T) {
	ctx := context.Background()
	var canonArgs []runtime.Object
	reuse := func(obj runtime.Object) (runtime.Object, error) {
		canonArgs = append(canonArgs, obj)
		return obj, nil
	}
	rebuild := func(obj runtime.Object) (runtime.Object, error) {
		canonArgs = append(canonArgs, obj)
		return obj.DeepCopyObject(), nil
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		kept bool // the stored object is the one handed over
	}{
		{"inline", Config{}, true},
		{"group commit", Config{Persister: &fakePersister{}}, true},
		{"canonical reusing its argument", Config{Canonical: reuse}, true},
		{"canonical copying", Config{Canonical: rebuild, CanonicalCopies: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canonArgs = nil
			e, err := New(tc.cfg)
			require.NoError(t, err)
			defer e.Close()

			in := pod("a")
			out, err := e.CreateOwned(ctx, key("a"), in)
			require.NoError(t, err)
			assert.Equal(t, tc.kept, in == out, "CreateOwned keeps the object handed over")
			assert.Equal(t, "1", out.(*corev1.Pod).ResourceVersion)
			cur, err := e.GetShared(ctx, key("a"))
			require.NoError(t, err)
			assert.Same(t, out, cur)

			var next *corev1.Pod
			out, err = e.UpdateOwned(ctx, key("a"), func(c runtime.Object) (runtime.Object, error) {
				assert.Same(t, cur, c, "tryUpdate gets the stored object")
				next = c.(*corev1.Pod).DeepCopy()
				next.Labels = map[string]string{"app": "web"}
				return next, nil
			})
			require.NoError(t, err)
			assert.Equal(t, tc.kept, next == out, "UpdateOwned keeps tryUpdate's object")
			assert.Equal(t, "2", out.(*corev1.Pod).ResourceVersion)
			assert.Empty(t, cur.(*corev1.Pod).Labels, "the previous object is left as it was")
			assert.Equal(t, "1", cur.(*corev1.Pod).ResourceVersion)

			inB := pod("b")
			_, err = e.CreateShared(ctx, key("b"), inB)
			require.NoError(t, err)
			if tc.cfg.Canonical != nil {
				require.Len(t, canonArgs, 3)
				assert.Same(t, in, canonArgs[0], "Canonical gets the object handed over")
				assert.Same(t, next, canonArgs[1])
				if !tc.cfg.CanonicalCopies {
					assert.NotSame(t, inB, canonArgs[2], "CreateShared still gives Canonical a copy")
				}
			}
		})
	}
}

// TestUpdateOwnedReturningCurWritesNothing: returning the stored object
// itself is a no-op, with no Persist call and no revision.
func TestUpdateOwnedReturningCurWritesNothing(t *testing.T) {
	ctx := context.Background()
	p := &fakePersister{}
	e := newEngine(t, p)
	created, err := e.CreateOwned(ctx, key("a"), pod("a"))
	require.NoError(t, err)
	out, err := e.UpdateOwned(ctx, key("a"), func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	require.NoError(t, err)
	assert.Same(t, created, out)
	rev, err := e.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), rev)
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Len(t, p.batches, 1, "only the create was persisted")
}
