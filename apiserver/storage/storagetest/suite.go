package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// Tuning asks a backend for a store with small limits, so that the suite
// can reach them quickly. A zero field means the backend's default.
type Tuning struct {
	// HistoryEvents: how many recent events the store keeps for watches
	// starting in the past (a backend without an event count, like etcd,
	// compacts to keep about that many).
	HistoryEvents int
	// WatcherBuffer: how many events a watcher may have pending before it
	// is dropped.
	WatcherBuffer int
	// BookmarkInterval: how often bookmarks are sent.
	BookmarkInterval time.Duration
}

// Option configures the suite.
type Option func(*suite)

// WithTuning gives the suite a constructor of tuned stores, which the
// checks of history loss (ErrGone), slow-watcher dropping and bookmarks
// need; they are skipped without it.
func WithTuning(newTuned func(t *testing.T, tune Tuning) storage.Store) Option {
	return func(s *suite) { s.newTuned = newTuned }
}

// WithTimeout sets how long the suite waits for an event that must come
// before failing (default 30s). It only guards against hangs; nothing is
// asserted about speed.
func WithTimeout(d time.Duration) Option {
	return func(s *suite) { s.timeout = d }
}

type suite struct {
	newStore func(t *testing.T) storage.Store
	newTuned func(t *testing.T, tune Tuning) storage.Store
	timeout  time.Duration
	// canonical: see WithCanonicalObjects.
	canonical bool
}

// RunConformance runs the storage.Store conformance suite. newStore must
// return a new, empty store for each call and close it in t.Cleanup
// (closing twice must be harmless: the suite closes some stores itself).
func RunConformance(t *testing.T, newStore func(t *testing.T) storage.Store, opts ...Option) {
	s := &suite{newStore: newStore, timeout: 30 * time.Second}
	for _, o := range opts {
		o(s)
	}
	groups := []struct {
		name  string
		tests []test
	}{
		{"CRUD", s.crudTests()},
		{"Update", s.updateTests()},
		{"Delete", s.deleteTests()},
		{"List", s.listTests()},
		{"Watch", s.watchTests()},
		{"Concurrency", s.concurrencyTests()},
		{"Lifecycle", s.lifecycleTests()},
		{"SharedWriter", s.sharedTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, tc.run)
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T)
}

// tuned returns a tuned store or skips t.
func (s *suite) tuned(t *testing.T, tune Tuning) storage.Store {
	t.Helper()
	if s.newTuned == nil {
		t.Skip("needs a tuned store: pass storagetest.WithTuning")
	}
	return s.newTuned(t, tune)
}

var (
	podsGR       = schema.GroupResource{Resource: "pods"}
	configMapsGR = schema.GroupResource{Resource: "configmaps"}
)

func podKey(ns, name string) string { return storage.Key(podsGR, ns, name) }
func podPrefix(ns string) string    { return storage.Key(podsGR, ns, "") }
func cmKey(ns, name string) string  { return storage.Key(configMapsGR, ns, name) }

func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: labels,
			UID: types.UID(fmt.Sprintf("uid-%s-%s", ns, name)),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func newConfigMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-cm-" + name)},
		Data:       data,
	}
}

func rev(t testing.TB, obj runtime.Object) uint64 {
	t.Helper()
	rv, err := storage.Revision(obj)
	require.NoError(t, err)
	return rv
}

func currentRev(t testing.TB, s storage.Store) uint64 {
	t.Helper()
	rv, err := s.CurrentRevision(context.Background())
	require.NoError(t, err)
	return rv
}

func create(t testing.TB, s storage.Store, key string, obj runtime.Object) runtime.Object {
	t.Helper()
	out, err := s.Create(context.Background(), key, obj)
	require.NoError(t, err, "create %s", key)
	return out
}

// relabel sets label k=v on the pod under key.
func relabel(t testing.TB, s storage.Store, key, k, v string) *corev1.Pod {
	t.Helper()
	out, err := s.Update(context.Background(), key, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
		return p, nil
	})
	require.NoError(t, err, "update %s", key)
	return out.(*corev1.Pod)
}

func names(objs []runtime.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			out = append(out, o.Namespace+"/"+o.Name)
		case *corev1.ConfigMap:
			out = append(out, o.Namespace+"/"+o.Name)
		default:
			out = append(out, fmt.Sprintf("%T", o))
		}
	}
	return out
}

// next returns the next event of w, failing after the suite's timeout.
func (s *suite) next(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch ended early")
		return ev
	case <-time.After(s.timeout):
		require.FailNow(t, "no watch event", "waited %s", s.timeout)
	}
	return watch.Event{}
}

// nextNonBookmark skips bookmarks.
func (s *suite) nextNonBookmark(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := s.next(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// closed waits for w's channel to close, draining it, and returns what it
// drained.
func (s *suite) closed(t testing.TB, w watch.Interface) []watch.Event {
	t.Helper()
	var got []watch.Event
	deadline := time.After(s.timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-deadline:
			require.FailNow(t, "watch not closed", "waited %s", s.timeout)
		}
	}
}

// eventSummary is an event in comparable form.
type eventSummary struct {
	Type watch.EventType
	Name string
	Rev  uint64
}

func summarize(t testing.TB, ev watch.Event) eventSummary {
	t.Helper()
	name := names([]runtime.Object{ev.Object})[0]
	return eventSummary{Type: ev.Type, Name: name, Rev: rev(t, ev.Object)}
}

// expectEvents reads len(want) non-bookmark events and compares them.
func (s *suite) expectEvents(t testing.TB, w watch.Interface, want ...eventSummary) {
	t.Helper()
	got := make([]eventSummary, 0, len(want))
	for range want {
		got = append(got, summarize(t, s.nextNonBookmark(t, w)))
	}
	require.Equal(t, want, got)
}

// expectQuiet checks that nothing but bookmarks arrives before a marker
// write lands: it writes a pod under marker and expects its ADDED next.
func (s *suite) expectQuiet(t testing.TB, st storage.Store, w watch.Interface, markerNS, markerName string) {
	t.Helper()
	out := create(t, st, podKey(markerNS, markerName), newPod(markerNS, markerName, map[string]string{"app": "web"}))
	s.expectEvents(t, w, eventSummary{watch.Added, markerNS + "/" + markerName, rev(t, out)})
}
