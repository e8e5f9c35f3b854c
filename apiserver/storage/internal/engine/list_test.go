package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/index"
)

func labelled(name string, labels map[string]string) *corev1.Pod {
	p := pod(name)
	p.Labels = labels
	return p
}

// TestLiveListsMatchSnapshotLists: a list read from the live tree returns
// what the snapshot path returns (items, resourceVersion, continue,
// remaining count), and is taken only when no continue token can result.
func TestLiveListsMatchSnapshotLists(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, nil)
	for i := range 6 {
		_, err := e.Create(ctx, "/registry/limitranges/ns/"+strconv.Itoa(i), labelled(strconv.Itoa(i), map[string]string{"odd": strconv.FormatBool(i%2 == 1)}))
		require.NoError(t, err)
	}
	for i := range index.DefaultLiveListMax + 1 {
		_, err := e.Create(ctx, key(fmt.Sprintf("p%03d", i)), labelled(fmt.Sprintf("p%03d", i), map[string]string{"odd": strconv.FormatBool(i%2 == 1)}))
		require.NoError(t, err)
	}
	odd := func(obj runtime.Object) bool { return obj.(*corev1.Pod).Labels["odd"] == "true" }
	for _, tc := range []struct {
		name   string
		prefix string
		opts   storage.ListOptions
		live   bool
	}{
		{"small prefix", "/registry/limitranges/ns/", storage.ListOptions{}, true},
		{"small prefix, read-only", "/registry/limitranges/ns/", storage.ListOptions{ReadOnly: true}, true},
		{"small prefix, predicate", "/registry/limitranges/ns/", storage.ListOptions{Predicate: odd}, true},
		{"small prefix, limit it fits", "/registry/limitranges/ns/", storage.ListOptions{Limit: 6}, true},
		{"small prefix, limit it exceeds", "/registry/limitranges/ns/", storage.ListOptions{Limit: 5}, false},
		{"small prefix, limit it exceeds, predicate", "/registry/limitranges/ns/", storage.ListOptions{Limit: 3, Predicate: odd}, false},
		{"empty prefix", "/registry/resourcequotas/ns/", storage.ListOptions{}, true},
		{"more than the live maximum", "/registry/pods/", storage.ListOptions{}, false},
		{"more than the live maximum, limited", "/registry/pods/", storage.ListOptions{Limit: 10, Predicate: odd}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := e.listView(tc.prefix, tc.opts)
			require.NoError(t, err)
			got, ok, err := e.listLive(tc.prefix, tc.opts)
			require.NoError(t, err)
			require.Equal(t, tc.live, ok)
			if ok {
				assert.Equal(t, want, got)
				assert.Empty(t, got.Continue)
			}
			listed, err := e.List(ctx, tc.prefix, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, want, listed, "List answers as the snapshot path does")
		})
	}
	require.NoError(t, e.Close())
	_, _, err := e.listLive("/registry/limitranges/ns/", storage.ListOptions{})
	assert.ErrorIs(t, err, storage.ErrClosed)
}

// TestLiveListsAreConsistentUnderWrites: lists of a small prefix taken
// while a writer changes its keys see, at the revision they report, the
// state the writes up to that revision left, no more and no less (-race:
// the live tree is read only under the engine's lock).
func TestLiveListsAreConsistentUnderWrites(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, nil)
	const keys, writes = 8, 400
	kk := func(i int) string { return "/registry/resourcequotas/ns/" + strconv.Itoa(i) }
	// history[rev] is the key written at rev and the value it got.
	type write struct {
		key   string
		value string
	}
	history := map[uint64]write{}
	record := func(obj runtime.Object, k, v string) {
		rv, err := strconv.ParseUint(obj.(*corev1.Pod).ResourceVersion, 10, 64)
		require.NoError(t, err)
		history[rv] = write{k, v}
	}
	for i := range keys {
		obj, err := e.Create(ctx, kk(i), labelled(strconv.Itoa(i), map[string]string{"v": "0"}))
		require.NoError(t, err)
		record(obj, kk(i), "0")
	}
	var lists []*storage.ListResult
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := e.List(ctx, "/registry/resourcequotas/ns/", storage.ListOptions{ReadOnly: true})
			if !assert.NoError(t, err) {
				return
			}
			assert.Empty(t, res.Continue)
			lists = append(lists, res)
		}
	}()
	for n := 1; n <= writes; n++ {
		k, v := kk(n%keys), strconv.Itoa(n)
		obj, err := e.Update(ctx, k, func(cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			p.Labels = map[string]string{"v": v}
			return p, nil
		})
		require.NoError(t, err)
		record(obj, k, v)
	}
	close(stop)
	wg.Wait()
	require.NotEmpty(t, lists)
	for _, res := range lists {
		want := map[string]string{}
		for rev := uint64(1); rev <= res.ResourceVersion; rev++ {
			if w, ok := history[rev]; ok {
				want[w.key] = w.value
			}
		}
		got := map[string]string{}
		for _, obj := range res.Items {
			p := obj.(*corev1.Pod)
			got["/registry/resourcequotas/ns/"+p.Name] = p.Labels["v"]
		}
		require.Equal(t, want, got, "the list at revision %d", res.ResourceVersion)
	}
}
