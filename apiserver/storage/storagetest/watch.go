package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

func (s *suite) watchTests() []test {
	ctx := context.Background()
	return []test{
		{"FromNow", func(t *testing.T) {
			st := s.newStore(t)
			create(t, st, podKey("ns", "before"), newPod("ns", "before", nil))
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			b := create(t, st, podKey("ns", "b"), newPod("ns", "b", nil))
			b2 := relabel(t, st, podKey("ns", "b"), "k", "v")
			gone, err := st.Delete(ctx, podKey("ns", "b"), nil)
			require.NoError(t, err)
			s.expectEvents(t, w,
				eventSummary{watch.Added, "ns/b", rev(t, b)},
				eventSummary{watch.Modified, "ns/b", rev(t, b2)},
				eventSummary{watch.Deleted, "ns/b", rev(t, gone)},
			)
		}},
		{"EventObjects", func(t *testing.T) {
			st := s.newStore(t)
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			create(t, st, podKey("ns", "a"), newPod("ns", "a", map[string]string{"app": "web"}))
			relabel(t, st, podKey("ns", "a"), "app", "db")
			_, err = st.Delete(ctx, podKey("ns", "a"), nil)
			require.NoError(t, err)
			added := s.nextNonBookmark(t, w)
			assert.Equal(t, "web", added.Object.(*corev1.Pod).Labels["app"])
			modified := s.nextNonBookmark(t, w)
			assert.Equal(t, "db", modified.Object.(*corev1.Pod).Labels["app"])
			deleted := s.nextNonBookmark(t, w)
			assert.Equal(t, watch.Deleted, deleted.Type)
			assert.Equal(t, "db", deleted.Object.(*corev1.Pod).Labels["app"], "DELETED carries the last state")
		}},
		{"PrefixIsolation", func(t *testing.T) {
			st := s.newStore(t)
			w, err := st.Watch(ctx, podPrefix("a"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			create(t, st, podKey("ab", "x"), newPod("ab", "x", nil))
			create(t, st, cmKey("a", "x"), newConfigMap("a", "x", nil))
			create(t, st, podKey("b", "x"), newPod("b", "x", nil))
			s.expectQuiet(t, st, w, "a", "marker")
		}},
		{"FromPastRevisionReplays", func(t *testing.T) {
			st := s.newStore(t)
			a := create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			b := create(t, st, podKey("ns", "b"), newPod("ns", "b", nil))
			create(t, st, podKey("other", "x"), newPod("other", "x", nil))
			a2 := relabel(t, st, podKey("ns", "a"), "k", "1")
			gone, err := st.Delete(ctx, podKey("ns", "b"), nil)
			require.NoError(t, err)

			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: rev(t, a)})
			require.NoError(t, err)
			defer w.Stop()
			c := create(t, st, podKey("ns", "c"), newPod("ns", "c", nil))
			s.expectEvents(t, w,
				eventSummary{watch.Added, "ns/b", rev(t, b)},
				eventSummary{watch.Modified, "ns/a", rev(t, a2)},
				eventSummary{watch.Deleted, "ns/b", rev(t, gone)},
				eventSummary{watch.Added, "ns/c", rev(t, c)},
			)
		}},
		{"FromCurrentRevision", func(t *testing.T) {
			st := s.newStore(t)
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: currentRev(t, st)})
			require.NoError(t, err)
			defer w.Stop()
			b := create(t, st, podKey("ns", "b"), newPod("ns", "b", nil))
			s.expectEvents(t, w, eventSummary{watch.Added, "ns/b", rev(t, b)})
		}},
		{"FromListRevision", func(t *testing.T) {
			// The informer pattern: list, then watch from the list's revision.
			st := s.newStore(t)
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			res, err := st.List(ctx, podPrefix("ns"), storage.ListOptions{})
			require.NoError(t, err)
			b := create(t, st, podKey("ns", "b"), newPod("ns", "b", nil))
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: res.ResourceVersion})
			require.NoError(t, err)
			defer w.Stop()
			s.expectEvents(t, w, eventSummary{watch.Added, "ns/b", rev(t, b)})
		}},
		{"FutureRevision", func(t *testing.T) {
			st := s.newStore(t)
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			_, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: currentRev(t, st) + 1000})
			require.ErrorIs(t, err, storage.ErrTooLargeResourceVersion)
		}},
		{"PredicateTransitions", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{Predicate: webOnly})
			require.NoError(t, err)
			defer w.Stop()
			create(t, st, podKey("ns", "db"), newPod("ns", "db", map[string]string{"app": "db"}))
			relabel(t, st, podKey("ns", "db"), "k", "still-not-web")
			added := create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			stayed := relabel(t, st, key, "k", "1")
			left := relabel(t, st, key, "app", "db")
			relabel(t, st, key, "k", "2") // outside: nothing
			back := relabel(t, st, key, "app", "web")
			_, err = st.Delete(ctx, podKey("ns", "db"), nil) // never matched: nothing
			require.NoError(t, err)
			gone, err := st.Delete(ctx, key, nil)
			require.NoError(t, err)
			s.expectEvents(t, w,
				eventSummary{watch.Added, "ns/a", rev(t, added)},
				eventSummary{watch.Modified, "ns/a", rev(t, stayed)},
				eventSummary{watch.Deleted, "ns/a", rev(t, left)},
				eventSummary{watch.Added, "ns/a", rev(t, back)},
				eventSummary{watch.Deleted, "ns/a", rev(t, gone)},
			)
			s.expectQuiet(t, st, w, "ns", "marker")
		}},
		{"PredicateLeavingCarriesPreviousState", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, key, newPod("ns", "a", map[string]string{"app": "web"}))
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{Predicate: webOnly})
			require.NoError(t, err)
			defer w.Stop()
			left := relabel(t, st, key, "app", "db")
			ev := s.nextNonBookmark(t, w)
			assert.Equal(t, watch.Deleted, ev.Type)
			// As kube-apiserver: the last state the watcher matched, at the
			// revision of the change that took it out of the selection.
			assert.Equal(t, "web", ev.Object.(*corev1.Pod).Labels["app"])
			assert.Equal(t, rev(t, left), rev(t, ev.Object))
		}},
		{"PredicateOnReplay", func(t *testing.T) {
			st := s.newStore(t)
			key := podKey("ns", "a")
			create(t, st, podKey("other", "x"), newPod("other", "x", nil))
			start := currentRev(t, st) // non-zero: 0 would mean "from now"
			create(t, st, key, newPod("ns", "a", map[string]string{"app": "db"}))
			in := relabel(t, st, key, "app", "web")
			out := relabel(t, st, key, "app", "db")
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: start, Predicate: webOnly})
			require.NoError(t, err)
			defer w.Stop()
			s.expectEvents(t, w,
				eventSummary{watch.Added, "ns/a", rev(t, in)},
				eventSummary{watch.Deleted, "ns/a", rev(t, out)},
			)
		}},
		{"GonePastTheWindow", func(t *testing.T) {
			st := s.tuned(t, Tuning{HistoryEvents: 5})
			first := create(t, st, podKey("ns", "p0"), newPod("ns", "p0", nil))
			for i := range 20 {
				relabel(t, st, podKey("ns", "p0"), "i", string(rune('a'+i)))
			}
			_, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: rev(t, first)})
			require.ErrorIs(t, err, storage.ErrGone)

			cur := currentRev(t, st)
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: cur})
			require.NoError(t, err, "the current revision is always inside the window")
			w.Stop()
			recent, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{ResourceVersion: cur - 2})
			require.NoError(t, err, "the last events are kept")
			defer recent.Stop()
			assert.Equal(t, cur-1, summarize(t, s.nextNonBookmark(t, recent)).Rev)
			assert.Equal(t, cur, summarize(t, s.nextNonBookmark(t, recent)).Rev)
		}},
		{"Bookmarks", func(t *testing.T) {
			st := s.tuned(t, Tuning{BookmarkInterval: 20 * time.Millisecond})
			w, err := st.Watch(ctx, podPrefix("quiet"), storage.WatchOptions{
				Bookmarks: true,
				NewFunc:   func() runtime.Object { return &corev1.Pod{} },
			})
			require.NoError(t, err)
			defer w.Stop()
			// Writes elsewhere advance the revision the watcher has caught up to.
			create(t, st, podKey("busy", "a"), newPod("busy", "a", nil))
			target := rev(t, relabel(t, st, podKey("busy", "a"), "k", "v"))
			var last uint64
			for last < target {
				ev := s.next(t, w)
				require.Equal(t, watch.Bookmark, ev.Type, "only bookmarks are expected")
				_, isPod := ev.Object.(*corev1.Pod)
				require.True(t, isPod, "bookmark objects come from NewFunc")
				rv := rev(t, ev.Object)
				assert.GreaterOrEqual(t, rv, last, "bookmarks never go back")
				last = rv
			}
			assert.Equal(t, target, last)
			// A bookmark's revision is a valid place to resume from.
			again, err := st.Watch(ctx, podPrefix("quiet"), storage.WatchOptions{ResourceVersion: last})
			require.NoError(t, err)
			again.Stop()
		}},
		{"BookmarksFollowEvents", func(t *testing.T) {
			st := s.tuned(t, Tuning{BookmarkInterval: 20 * time.Millisecond})
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{
				Bookmarks: true,
				NewFunc:   func() runtime.Object { return &corev1.Pod{} },
			})
			require.NoError(t, err)
			defer w.Stop()
			a := create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			for {
				ev := s.next(t, w)
				if ev.Type != watch.Bookmark {
					assert.Equal(t, eventSummary{watch.Added, "ns/a", rev(t, a)}, summarize(t, ev))
					break
				}
				assert.Less(t, rev(t, ev.Object), rev(t, a), "a bookmark must not overtake an undelivered event")
			}
		}},
	}
}
