package index

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/apiserver/storage"
)

func put(t *Tree, key string, rev uint64) {
	t.Put(&Item{Key: key, Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key}}, Rev: rev})
	t.SetRev(rev)
}

func keys(res *storage.ListResult) []string {
	var out []string
	for _, o := range res.Items {
		out = append(out, o.(*corev1.Pod).Name)
	}
	return out
}

func TestViewIsASnapshot(t *testing.T) {
	tr := New(0, Options{})
	put(tr, "/p/a", 1)
	put(tr, "/p/b", 2)
	v := tr.View()
	put(tr, "/p/c", 3)
	tr.Delete("/p/a")
	res, err := v.List("/p/", "", storage.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/a", "/p/b"}, keys(res))
	assert.Equal(t, uint64(2), res.ResourceVersion)
	res, err = tr.View().List("/p/", "", storage.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/b", "/p/c"}, keys(res))
}

func TestStartBeforePrefixIsClamped(t *testing.T) {
	tr := New(0, Options{})
	put(tr, "/p/a/x", 1)
	put(tr, "/p/b/x", 2)
	res, err := tr.View().List("/p/b/", "/p/", storage.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/b/x"}, keys(res))
}

func TestRetainedSnapshots(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	tr := New(0, Options{MaxSnapshots: 2, SnapshotTTL: time.Minute, Clock: clk})
	var views []*View
	for i := range 3 {
		put(tr, fmt.Sprintf("/p/%d", i), uint64(i+1))
		v := tr.View()
		tr.Retain(v)
		views = append(views, v)
		clk.Step(time.Second)
	}
	put(tr, "/p/late", 4)
	assert.Equal(t, 2, tr.Snapshots())
	_, err := tr.ViewAt(1)
	require.ErrorIs(t, err, storage.ErrContinueExpired, "least recently used goes first")
	v, err := tr.ViewAt(2)
	require.NoError(t, err)
	assert.Same(t, views[1], v)
	v, err = tr.ViewAt(4)
	require.NoError(t, err, "the current revision needs no snapshot")
	assert.Equal(t, uint64(4), v.Rev())
	_, err = tr.ViewAt(5)
	require.ErrorIs(t, err, storage.ErrInvalidContinue)
	assert.NotErrorIs(t, err, storage.ErrContinueExpired)

	clk.Step(2 * time.Minute)
	_, err = tr.ViewAt(2)
	require.ErrorIs(t, err, storage.ErrContinueExpired, "expired by TTL")
	assert.Zero(t, tr.Snapshots())
}

func TestListLimitAndRemaining(t *testing.T) {
	tr := New(0, Options{})
	for i := range 10 {
		put(tr, fmt.Sprintf("/p/%02d", i), uint64(i+1))
	}
	put(tr, "/q/x", 11)
	v := tr.View()
	res, err := v.List("/p/", "", storage.ListOptions{Limit: 4})
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/00", "/p/01", "/p/02", "/p/03"}, keys(res))
	require.NotNil(t, res.RemainingItemCount)
	assert.Equal(t, int64(6), *res.RemainingItemCount)
	start, rv, err := storage.DecodeContinue("/p/", res.Continue)
	require.NoError(t, err)
	assert.Equal(t, "/p/03\x00", start)
	assert.Equal(t, uint64(11), rv)

	res, err = v.List("/p/", start, storage.ListOptions{Limit: 6})
	require.NoError(t, err)
	assert.Len(t, res.Items, 6)
	assert.Empty(t, res.Continue)
}

// Get (through the key map) agrees with the ordered tree through random
// puts, replacements and deletes, also of keys never stored.
func TestGetAgreesWithTheTree(t *testing.T) {
	tr := New(0, Options{})
	want := map[string]uint64{}
	for i := range 2000 {
		key := fmt.Sprintf("/p/%03d", (i*7919)%300)
		rev := uint64(i + 1)
		if i%3 == 2 {
			tr.Delete(key)
			delete(want, key)
		} else {
			put(tr, key, rev)
			want[key] = rev
		}
		probe := fmt.Sprintf("/p/%03d", (i*31)%310)
		it, ok := tr.Get(probe)
		wrev, wok := want[probe]
		require.Equal(t, wok, ok, "step %d key %s", i, probe)
		if ok {
			require.Equal(t, wrev, it.Rev, "step %d key %s", i, probe)
		}
	}
	res, err := tr.View().List("/p/", "", storage.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, res.Items, len(want))
	assert.Equal(t, len(want), tr.Len())
	for _, k := range keys(res) {
		it, ok := tr.Get(k)
		require.True(t, ok, k)
		assert.Equal(t, want[k], it.Rev)
	}
}
