package storewatch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// names keeps the names of the objects it was fed.
type names struct {
	mu  sync.Mutex
	set map[string]bool
}

func (n *names) Replace(objs []runtime.Object) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.set = map[string]bool{}
	for _, o := range objs {
		n.set[o.(*corev1.ConfigMap).Name] = true
	}
}

func (n *names) Upsert(obj runtime.Object) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.set[obj.(*corev1.ConfigMap).Name] = true
}

func (n *names) Delete(obj runtime.Object) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.set, obj.(*corev1.ConfigMap).Name)
}

func (n *names) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for k := range n.set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// failingList fails the first List calls.
type failingList struct {
	storage.Store
	failures atomic.Int32
}

func (f *failingList) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, errors.New("store unavailable")
	}
	return f.Store.List(ctx, prefix, opts)
}

func TestRunFollowsStore(t *testing.T) {
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	st := &failingList{Store: memory.New()}
	t.Cleanup(func() { _ = st.Close() })
	st.failures.Store(2) // retried
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	_, err := st.Create(ctx, storage.Key(gr, "ns", "a"), cm("a"))
	require.NoError(t, err)

	h := &names{}
	synced := NewSynced()
	var syncedCalls atomic.Int32
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(runCtx, st, storage.Prefix(gr), h, func() { syncedCalls.Add(1); synced.Done() }, nil, time.Millisecond)
	}()
	require.NoError(t, synced.WaitTimeout(ctx, time.Minute))
	assert.Equal(t, []string{"a"}, h.list(), "the first list")

	_, err = st.Create(ctx, storage.Key(gr, "ns", "b"), cm("b"))
	require.NoError(t, err)
	_, err = st.Delete(ctx, storage.Key(gr, "ns", "a"), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slices.Equal(h.list(), []string{"b"}) }, time.Minute, time.Millisecond, "watched changes")

	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	assert.EqualValues(t, 1, syncedCalls.Load(), "synced once")
}
