package storagetest

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

func webOnly(obj runtime.Object) bool {
	p, ok := obj.(*corev1.Pod)
	return ok && p.Labels["app"] == "web"
}

// listAll follows continue tokens to the end, checking every page.
func listAll(t *testing.T, st storage.Store, prefix string, opts storage.ListOptions) (pages [][]string, rv uint64) {
	t.Helper()
	for i := 0; ; i++ {
		require.Less(t, i, 1000, "too many pages")
		res, err := st.List(context.Background(), prefix, opts)
		require.NoError(t, err)
		if i == 0 {
			rv = res.ResourceVersion
		} else {
			assert.Equal(t, rv, res.ResourceVersion, "page %d must report the first page's revision", i)
		}
		if opts.Limit > 0 {
			assert.LessOrEqual(t, int64(len(res.Items)), opts.Limit)
		}
		pages = append(pages, names(res.Items))
		if res.Continue == "" {
			assert.Nil(t, res.RemainingItemCount, "no remaining count on the last page")
			return pages, rv
		}
		opts.Continue = res.Continue
	}
}

func (s *suite) listTests() []test {
	ctx := context.Background()
	return []test{
		{"ByPrefixWithNamespaceIsolation", func(t *testing.T) {
			st := s.newStore(t)
			create(t, st, podKey("a", "y"), newPod("a", "y", nil))
			create(t, st, podKey("ab", "x"), newPod("ab", "x", nil))
			create(t, st, podKey("a", "x"), newPod("a", "x", nil))
			create(t, st, cmKey("a", "x"), newConfigMap("a", "x", nil))
			create(t, st, podKey("b", "z"), newPod("b", "z", nil))
			for _, tc := range []struct {
				prefix string
				want   []string
			}{
				{podPrefix("a"), []string{"a/x", "a/y"}},
				{podPrefix("ab"), []string{"ab/x"}},
				{podPrefix(""), []string{"a/x", "a/y", "ab/x", "b/z"}},
				{storage.Key(configMapsGR, "", ""), []string{"a/x"}},
				{podPrefix("none"), []string{}},
			} {
				res, err := st.List(ctx, tc.prefix, storage.ListOptions{})
				require.NoError(t, err, tc.prefix)
				assert.Equal(t, tc.want, names(res.Items), tc.prefix)
				assert.Equal(t, currentRev(t, st), res.ResourceVersion, tc.prefix)
				assert.Empty(t, res.Continue, tc.prefix)
				assert.Nil(t, res.RemainingItemCount, tc.prefix)
			}
		}},
		{"ItemsCarryTheirRevisions", func(t *testing.T) {
			st := s.newStore(t)
			a := create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			b := create(t, st, podKey("ns", "b"), newPod("ns", "b", nil))
			res, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{})
			require.NoError(t, err)
			require.Len(t, res.Items, 2)
			assert.Equal(t, rev(t, a), rev(t, res.Items[0]))
			assert.Equal(t, rev(t, b), rev(t, res.Items[1]))
			res.Items[0].(*corev1.Pod).Labels = map[string]string{"mutated": "yes"}
			got, err := st.Get(ctx, podKey("ns", "a"))
			require.NoError(t, err)
			assert.Empty(t, got.(*corev1.Pod).Labels, "listed objects are copies")
		}},
		{"Pagination", func(t *testing.T) {
			st := s.newStore(t)
			var want []string
			for i := range 25 {
				name := fmt.Sprintf("p%02d", i)
				create(t, st, podKey("ns", name), newPod("ns", name, nil))
				want = append(want, "ns/"+name)
			}
			create(t, st, podKey("ns2", "other"), newPod("ns2", "other", nil))
			res, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Limit: 10})
			require.NoError(t, err)
			require.Len(t, res.Items, 10)
			require.NotEmpty(t, res.Continue)
			require.NotNil(t, res.RemainingItemCount)
			assert.Equal(t, int64(15), *res.RemainingItemCount)
			res2, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Limit: 10, Continue: res.Continue})
			require.NoError(t, err)
			require.NotNil(t, res2.RemainingItemCount)
			assert.Equal(t, int64(5), *res2.RemainingItemCount)

			pages, rv := listAll(t, st, podPrefix("ns"), storage.ListOptions{Limit: 10})
			assert.Equal(t, currentRev(t, st), rv)
			require.Len(t, pages, 3)
			var all []string
			for _, p := range pages {
				all = append(all, p...)
			}
			assert.Equal(t, want, all)
		}},
		{"LimitCoveringEverything", func(t *testing.T) {
			st := s.newStore(t)
			for _, n := range []string{"a", "b", "c"} {
				create(t, st, podKey("ns", n), newPod("ns", n, nil))
			}
			for _, limit := range []int64{3, 4, 100} {
				res, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Limit: limit})
				require.NoError(t, err)
				assert.Len(t, res.Items, 3)
				assert.Empty(t, res.Continue, "limit %d", limit)
				assert.Nil(t, res.RemainingItemCount)
			}
		}},
		{"PaginationIsASnapshot", func(t *testing.T) {
			st := s.newStore(t)
			for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
				create(t, st, podKey("ns", n), newPod("ns", n, nil))
			}
			first, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Limit: 3})
			require.NoError(t, err)
			assert.Equal(t, []string{"ns/a", "ns/b", "ns/c"}, names(first.Items))
			// Writes after the first page must not show in the next ones.
			_, err = st.Delete(ctx, podKey("ns", "e"), nil)
			require.NoError(t, err)
			create(t, st, podKey("ns", "dd"), newPod("ns", "dd", nil))
			relabel(t, st, podKey("ns", "d"), "k", "late")
			second, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Limit: 3, Continue: first.Continue})
			require.NoError(t, err)
			assert.Equal(t, []string{"ns/d", "ns/e", "ns/f"}, names(second.Items))
			assert.Empty(t, second.Items[0].(*corev1.Pod).Labels["k"])
			assert.Equal(t, first.ResourceVersion, second.ResourceVersion)
			assert.Empty(t, second.Continue)
		}},
		{"PaginationWithPredicate", func(t *testing.T) {
			st := s.newStore(t)
			var want []string
			for i := range 20 {
				name := fmt.Sprintf("p%02d", i)
				labels := map[string]string{"app": "db"}
				if i%2 == 1 || i == 18 {
					labels["app"] = "web"
					want = append(want, "ns/"+name)
				}
				create(t, st, podKey("ns", name), newPod("ns", name, labels))
			}
			res, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Predicate: webOnly})
			require.NoError(t, err)
			assert.Equal(t, want, names(res.Items))

			first, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Predicate: webOnly, Limit: 4})
			require.NoError(t, err)
			assert.Len(t, first.Items, 4, "Limit counts matching objects")
			assert.Nil(t, first.RemainingItemCount, "the remaining count is not known under a predicate")

			pages, _ := listAll(t, st, podPrefix("ns"), storage.ListOptions{Predicate: webOnly, Limit: 4})
			var all []string
			for _, p := range pages {
				all = append(all, p...)
			}
			assert.Equal(t, want, all)
		}},
		{"InvalidContinue", func(t *testing.T) {
			st := s.newStore(t)
			for _, n := range []string{"a", "b", "c"} {
				create(t, st, podKey("ns", n), newPod("ns", n, nil))
			}
			enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
			for name, token := range map[string]string{
				"not base64":     "%%%not-base64%%%",
				"not json":       enc("{nope"),
				"wrong version":  enc(`{"v":"v9","rv":1,"start":"/a"}`),
				"no revision":    enc(`{"v":"meta.k8s.io/v1","start":"/a"}`),
				"no start":       enc(`{"v":"meta.k8s.io/v1","rv":1}`),
				"path traversal": enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"/../../secrets/x"}`),
			} {
				_, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{Limit: 1, Continue: token})
				assert.ErrorIs(t, err, storage.ErrInvalidContinue, name)
			}
		}},
	}
}
