package watchcache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

func nodeOf(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName }

func onNode(node string) storage.Predicate {
	return func(obj runtime.Object) bool { return nodeOf(obj) == node }
}

func byNode(node string) *storage.WatchIndex {
	return &storage.WatchIndex{Name: "pods:spec.nodeName", Func: nodeOf, Value: node}
}

// nodePod is a pod event on node; prev, when set, is the pod's node before.
func nodePod(typ watch.EventType, name, node string, rv uint64, prev *string) watchcache.Event {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	_ = storage.SetRevision(p, rv)
	ev := watchcache.Event{Type: typ, Key: "/registry/pods/ns/" + name, Object: p, Revision: rv}
	if prev != nil {
		old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: *prev}}
		_ = storage.SetRevision(old, rv-1)
		ev.PrevObject = old
	}
	return ev
}

func ptr(s string) *string { return &s }

// births is a pod's life seen by the watch cache: created unscheduled,
// bound, updated on its node, deleted; interleaved with another node's pod.
func births() []watchcache.Event {
	return []watchcache.Event{
		nodePod(watch.Added, "a", "", 2, nil),
		nodePod(watch.Added, "b", "n2", 3, nil),
		nodePod(watch.Modified, "a", "n1", 4, ptr("")),
		nodePod(watch.Modified, "b", "n2", 5, ptr("n2")),
		nodePod(watch.Modified, "a", "n1", 6, ptr("n1")),
		nodePod(watch.Deleted, "a", "n1", 7, ptr("n1")),
	}
}

type seen struct {
	Type watch.EventType
	Name string
	Rev  uint64
}

func collect(t *testing.T, w watch.Interface, n int) []seen {
	t.Helper()
	out := make([]seen, 0, n)
	for range n {
		ev := next(t, w)
		out = append(out, seen{ev.Type, ev.Object.(*corev1.Pod).Name, revOf(t, ev.Object)})
	}
	return out
}

// An indexed watch delivers exactly what the same predicate delivers
// without the index, for every node value including the unscheduled "",
// both live and replayed from history.
func TestIndexedWatchDeliversTheSameEvents(t *testing.T) {
	want := map[string][]seen{
		"":   {{watch.Added, "a", 2}, {watch.Deleted, "a", 4}},
		"n1": {{watch.Added, "a", 4}, {watch.Modified, "a", 6}, {watch.Deleted, "a", 7}},
		"n2": {{watch.Added, "b", 3}, {watch.Modified, "b", 5}},
	}
	for node, events := range want {
		t.Run("node="+node, func(t *testing.T) {
			ctx := context.Background()
			c := newCache(t, 1)
			plain, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{Predicate: onNode(node)})
			require.NoError(t, err)
			defer plain.Stop()
			live, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{Predicate: onNode(node), Index: byNode(node)})
			require.NoError(t, err)
			defer live.Stop()
			require.NoError(t, c.Append(births()...))
			replay, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{ResourceVersion: 1, Predicate: onNode(node), Index: byNode(node)})
			require.NoError(t, err)
			defer replay.Stop()

			assert.Equal(t, events, collect(t, plain, len(events)))
			assert.Equal(t, events, collect(t, live, len(events)))
			assert.Equal(t, events, collect(t, replay, len(events)))
		})
	}
}

// Another node's events never reach an indexed watcher's buffer, so a burst
// elsewhere cannot overflow it, while an unindexed watcher with the same
// predicate and buffer is dropped.
func TestIndexedWatcherIsNotVisitedByOtherValues(t *testing.T) {
	ctx := context.Background()
	c := newCache(t, 0, watchcache.WithWatcherBuffer(2))
	indexed, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{Predicate: onNode("n1"), Index: byNode("n1")})
	require.NoError(t, err)
	defer indexed.Stop()
	plain, err := c.Watch(ctx, "/registry/pods/", storage.WatchOptions{Predicate: onNode("n1")})
	require.NoError(t, err)
	defer plain.Stop()
	otherPrefix, err := c.Watch(ctx, "/registry/pods/other/", storage.WatchOptions{Predicate: onNode("n1"), Index: byNode("n1")})
	require.NoError(t, err)
	defer otherPrefix.Stop()
	assert.Equal(t, 3, c.Stats().Watchers)

	for rv := uint64(1); rv <= 50; rv++ {
		require.NoError(t, c.Append(nodePod(watch.Added, fmt.Sprintf("p%d", rv), "n2", rv, nil)))
	}
	require.NoError(t, c.Append(nodePod(watch.Added, "mine", "n1", 51, nil)))

	assert.Equal(t, []seen{{watch.Added, "mine", 51}}, collect(t, indexed, 1))
	assert.Equal(t, 0, waitClosed(t, plain), "the unindexed watcher is dropped without delivering")
	st := c.Stats()
	assert.Equal(t, uint64(1), st.Dropped)
	assert.Equal(t, 2, st.Watchers)

	indexed.Stop()
	otherPrefix.Stop()
	assert.Equal(t, 0, c.Stats().Watchers, "stopped indexed watchers leave the cache")
}
