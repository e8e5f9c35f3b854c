package index

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// liveTree holds 5 keys under /r/a/ (odd ones labelled), 1 under /r/ab/,
// 300 under /r/big/ and one past them, at revision 400.
func liveTree() *Tree {
	tr := New(0, Options{})
	add := func(key string, odd bool) {
		labels := map[string]string{}
		if odd {
			labels["odd"] = "yes"
		}
		tr.Put(&Item{Key: key, Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key, Labels: labels}}, Rev: 1})
	}
	for i := range 5 {
		add(fmt.Sprintf("/r/a/%d", i), i%2 == 1)
	}
	add("/r/ab/0", false)
	for i := range 300 {
		add(fmt.Sprintf("/r/big/%03d", i), i%2 == 1)
	}
	add("/r/c", false)
	tr.SetRev(400)
	return tr
}

func odd(obj runtime.Object) bool { return obj.(*corev1.Pod).Labels["odd"] == "yes" }

// TestListItemsMatchesTheSnapshot: ListItems over what Collect returns is
// the first page View.List reads, field for field, for every prefix,
// limit and predicate; Collect gives up on prefixes holding more than max.
func TestListItemsMatchesTheSnapshot(t *testing.T) {
	tr := liveTree()
	for _, tc := range []struct {
		name   string
		prefix string
		opts   storage.ListOptions
		max    int
		live   bool // Collect returns the items
	}{
		{"all of a prefix", "/r/a/", storage.ListOptions{}, 256, true},
		{"a prefix that is a prefix of another", "/r/a", storage.ListOptions{}, 256, true},
		{"empty prefix result", "/r/none/", storage.ListOptions{}, 256, true},
		{"limit above the count", "/r/a/", storage.ListOptions{Limit: 10}, 256, true},
		{"limit equal to the count", "/r/a/", storage.ListOptions{Limit: 5}, 256, true},
		{"limit below the count: continue and remaining", "/r/a/", storage.ListOptions{Limit: 2}, 256, true},
		{"predicate", "/r/a/", storage.ListOptions{Predicate: odd}, 256, true},
		{"predicate and limit", "/r/a/", storage.ListOptions{Predicate: odd, Limit: 1}, 256, true},
		{"predicate and a limit met exactly", "/r/a/", storage.ListOptions{Predicate: odd, Limit: 2}, 256, true},
		{"read-only", "/r/a/", storage.ListOptions{ReadOnly: true}, 256, true},
		{"exactly max items", "/r/a/", storage.ListOptions{}, 5, true},
		{"more than max items", "/r/big/", storage.ListOptions{}, 256, false},
		{"one more than max", "/r/a/", storage.ListOptions{}, 4, false},
		{"big prefix with a large max", "/r/big/", storage.ListOptions{Limit: 7, Predicate: odd}, 1000, true},
		{"whole tree", "/", storage.ListOptions{Limit: 50}, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tr.View().List(tc.prefix, "", tc.opts)
			require.NoError(t, err)
			items, rev, ok := tr.Collect(tc.prefix, tc.max)
			require.Equal(t, tc.live, ok)
			if !ok {
				assert.Nil(t, items)
				return
			}
			assert.Equal(t, uint64(400), rev)
			got, err := ListItems(items, rev, tc.prefix, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			for i := range got.Items {
				if tc.opts.ReadOnly {
					assert.Same(t, want.Items[i], got.Items[i], "read-only lists share the stored objects")
				} else {
					assert.NotSame(t, want.Items[i], got.Items[i], "lists copy unless read-only")
				}
			}
		})
	}
}

// TestCollectLeavesTheTreeAlone: Collect neither clones the tree nor
// changes it; a later write is not seen by the items collected before.
func TestCollectLeavesTheTreeAlone(t *testing.T) {
	tr := liveTree()
	items, _, ok := tr.Collect("/r/a/", 256)
	require.True(t, ok)
	put(tr, "/r/a/9", 401)
	tr.Delete("/r/a/0")
	got, err := ListItems(items, 400, "/r/a/", storage.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, got.Items, 5)
	assert.Equal(t, "/r/a/0", got.Items[0].(*corev1.Pod).Name)
	now, _, ok := tr.Collect("/r/a/", 256)
	require.True(t, ok)
	assert.Len(t, now, 5)
	assert.Equal(t, "/r/a/9", now[4].Key)
	_, found := tr.Get("/r/a/0")
	assert.False(t, found)
}
