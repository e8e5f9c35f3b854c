package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/index"
)

// fakePersister records batches; it can hold the first call and fail.
type fakePersister struct {
	mu      sync.Mutex
	batches [][]Change
	revs    []uint64
	hold    chan struct{} // when set, Persist waits for it to close
	entered chan struct{} // closed when Persist is first entered
	fail    error
}

func (p *fakePersister) Persist(changes []Change, rev uint64) error {
	p.mu.Lock()
	hold, entered := p.hold, p.entered
	p.entered = nil
	p.mu.Unlock()
	if entered != nil {
		close(entered)
	}
	if hold != nil {
		<-hold
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.batches = append(p.batches, append([]Change(nil), changes...))
	p.revs = append(p.revs, rev)
	return nil
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func key(name string) string { return "/registry/pods/ns/" + name }

func newEngine(t *testing.T, p Persister) *Engine {
	t.Helper()
	e, err := New(Config{Persister: p})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// waitQueued waits until n writes are queued behind the held commit.
func waitQueued(t *testing.T, e *Engine, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); len(e.reqs) < n; {
		require.True(t, time.Now().Before(deadline), "writes never queued")
		time.Sleep(time.Millisecond)
	}
}

func TestGroupCommitSharesOnePersist(t *testing.T) {
	ctx := context.Background()
	hold, entered := make(chan struct{}), make(chan struct{})
	p := &fakePersister{hold: hold, entered: entered}
	e := newEngine(t, p)
	w, err := e.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()

	first := make(chan error, 1)
	go func() { _, err := e.Create(ctx, key("first"), pod("first")); first <- err }()
	<-entered // the first commit is in Persist, held

	const n = 10
	results := make(chan runtime.Object, n)
	for i := range n {
		go func() {
			out, err := e.Create(ctx, key(fmt.Sprintf("p%d", i)), pod(fmt.Sprintf("p%d", i)))
			assert.NoError(t, err)
			results <- out
		}()
	}
	waitQueued(t, e, n)
	// Nothing is visible before the commit returns.
	_, err = e.Get(ctx, key("first"))
	require.ErrorIs(t, err, storage.ErrNotFound)
	rv, err := e.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Zero(t, rv)
	assert.Empty(t, w.ResultChan())

	close(hold)
	require.NoError(t, <-first)
	seen := map[uint64]bool{}
	for range n {
		rv, err := storage.Revision(<-results)
		require.NoError(t, err)
		seen[rv] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Len(t, p.batches, 2, "the queued writes share one commit")
	assert.Len(t, p.batches[1], n)
	assert.Equal(t, []uint64{1, 1 + n}, p.revs)
	for rv := uint64(2); rv <= 1+n; rv++ {
		assert.True(t, seen[rv], "revision %d", rv)
	}
	// Events come in revision order, which is the order within the batch.
	for want := uint64(1); want <= 1+n; want++ {
		ev := <-w.ResultChan()
		rv, err := storage.Revision(ev.Object)
		require.NoError(t, err)
		assert.Equal(t, want, rv)
	}
	for i, c := range p.batches[1] {
		rv, err := storage.Revision(c.Obj)
		require.NoError(t, err)
		assert.Equal(t, uint64(2+i), rv, "persisted objects carry their revisions")
	}
}

func TestBatchChecksAgainstItsOwnWrites(t *testing.T) {
	ctx := context.Background()
	hold, entered := make(chan struct{}), make(chan struct{})
	p := &fakePersister{hold: hold, entered: entered}
	e := newEngine(t, p)
	go func() { _, _ = e.Create(ctx, key("hold"), pod("hold")) }()
	<-entered
	errs := make(chan error, 3)
	for range 3 {
		go func() { _, err := e.Create(ctx, key("same"), pod("same")); errs <- err }()
	}
	waitQueued(t, e, 3)
	close(hold)
	var ok, exists int
	for range 3 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, storage.ErrExists):
			exists++
		default:
			t.Fatal(err)
		}
	}
	assert.Equal(t, 1, ok)
	assert.Equal(t, 2, exists)
	rv, err := e.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), rv, "failed writes use no revision")
}

func TestPersistFailureChangesNothing(t *testing.T) {
	ctx := context.Background()
	p := &fakePersister{}
	e := newEngine(t, p)
	_, err := e.Create(ctx, key("a"), pod("a"))
	require.NoError(t, err)
	w, err := e.Watch(ctx, "/registry/pods/", storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()

	disk := errors.New("disk full")
	p.mu.Lock()
	p.fail = disk
	p.mu.Unlock()
	_, err = e.Create(ctx, key("b"), pod("b"))
	require.ErrorIs(t, err, disk)
	_, err = e.Update(ctx, key("a"), func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Labels = map[string]string{"k": "v"}
		return cur, nil
	})
	require.ErrorIs(t, err, disk)
	_, err = e.Delete(ctx, key("a"), nil)
	require.ErrorIs(t, err, disk)

	rv, err := e.CurrentRevision(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), rv)
	got, err := e.Get(ctx, key("a"))
	require.NoError(t, err)
	assert.Empty(t, got.(*corev1.Pod).Labels)
	assert.Empty(t, w.ResultChan())

	p.mu.Lock()
	p.fail = nil
	p.mu.Unlock()
	out, err := e.Create(ctx, key("b"), pod("b"))
	require.NoError(t, err)
	assert.Equal(t, "2", out.(*corev1.Pod).ResourceVersion)
}

func TestCloseFailsQueuedWrites(t *testing.T) {
	ctx := context.Background()
	hold, entered := make(chan struct{}), make(chan struct{})
	p := &fakePersister{hold: hold, entered: entered}
	e, err := New(Config{Persister: p})
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() { _, err := e.Create(ctx, key("first"), pod("first")); first <- err }()
	<-entered
	queued := make(chan error, 1)
	go func() { _, err := e.Create(ctx, key("queued"), pod("queued")); queued <- err }()
	waitQueued(t, e, 1)
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	<-e.stopLoop // Close has begun
	close(hold)
	require.NoError(t, <-first, "the commit in progress completes")
	require.ErrorIs(t, <-queued, storage.ErrClosed)
	require.NoError(t, <-closed)
}

func TestCanonicalErrorsAreInvalidObject(t *testing.T) {
	bad := errors.New("cannot encode")
	e, err := New(Config{Canonical: func(runtime.Object) (runtime.Object, error) { return nil, bad }})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Create(context.Background(), key("a"), pod("a"))
	require.ErrorIs(t, err, storage.ErrInvalidObject)
	require.ErrorIs(t, err, bad)
}

func TestInitialItemsMustNotBeAheadOfTheRevision(t *testing.T) {
	_, err := New(Config{Revision: 3, Items: []*index.Item{{Key: key("a"), Obj: pod("a"), Rev: 4}}})
	require.Error(t, err)
}

func TestNoOpUpdateSkipsTheWrite(t *testing.T) {
	ctx := context.Background()
	p := &fakePersister{}
	e := newEngine(t, p)
	_, err := e.Create(ctx, key("a"), pod("a"))
	require.NoError(t, err)
	out, err := e.Update(ctx, key("a"), func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	require.NoError(t, err)
	assert.Equal(t, "1", out.(*corev1.Pod).ResourceVersion)
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Len(t, p.batches, 1)
}
