package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// recordingSink records writes; failFirst fails the first write of each
// event with failErr.
type recordingSink struct {
	mu        sync.Mutex
	writes    []string // "create ns/name" or "patch ns/name"
	seen      map[string]bool
	failErr   error
	notFound  bool // patches answer NotFound
	blockedCh chan struct{}
}

func (r *recordingSink) record(op string, e *corev1.Event) error {
	if r.blockedCh != nil {
		<-r.blockedCh
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := e.Namespace + "/" + e.Name
	if r.failErr != nil && !r.seen[op+key] {
		r.seen[op+key] = true
		return r.failErr
	}
	r.writes = append(r.writes, op+" "+key)
	return nil
}

func (r *recordingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return e, r.record("create", e)
}
func (r *recordingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return e, r.record("update", e)
}
func (r *recordingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	if r.notFound {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, e.Name)
	}
	return e, r.record("patch", e)
}

func (r *recordingSink) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

func event(name string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Reason: "Scheduled"}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestConcurrentSinkWritesEveryEventInOrderPerEvent: all accepted events
// are written by close; an event's create precedes its patch.
func TestConcurrentSinkWritesEveryEventInOrderPerEvent(t *testing.T) {
	next := &recordingSink{seen: map[string]bool{}}
	c := newConcurrentSink(next, 4, 2, time.Millisecond, quietLog)
	for i := range 50 {
		e := event(fmt.Sprintf("e%02d", i))
		_, err := c.Create(e)
		require.NoError(t, err)
		_, err = c.Patch(e, []byte(`{}`))
		require.NoError(t, err)
	}
	c.close(context.Background())
	writes := next.snapshot()
	require.Len(t, writes, 100)
	pos := map[string]int{}
	for i, w := range writes {
		pos[w] = i
	}
	for i := range 50 {
		name := fmt.Sprintf("ns/e%02d", i)
		assert.Less(t, pos["create "+name], pos["patch "+name], name)
	}
	_, err := c.Create(event("late"))
	assert.Error(t, err, "closed sink refuses writes")
}

func TestConcurrentSinkRetries(t *testing.T) {
	t.Run("transport errors are retried", func(t *testing.T) {
		next := &recordingSink{seen: map[string]bool{}, failErr: errors.New("connection reset")}
		c := newConcurrentSink(next, 1, 1, time.Millisecond, quietLog)
		defer c.close(context.Background())
		_, err := c.Create(event("a"))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(next.snapshot()) == 1 }, 10*time.Second, time.Millisecond)
		assert.Equal(t, []string{"create ns/a"}, next.snapshot())
	})
	t.Run("refusals are not", func(t *testing.T) {
		next := &recordingSink{seen: map[string]bool{}, failErr: apierrors.NewBadRequest("no")}
		c := newConcurrentSink(next, 1, 1, time.Millisecond, quietLog)
		_, err := c.Create(event("a"))
		require.NoError(t, err)
		c.close(context.Background())
		assert.Empty(t, next.snapshot())
	})
	t.Run("a patch of a vanished event creates it", func(t *testing.T) {
		next := &recordingSink{seen: map[string]bool{}, notFound: true}
		c := newConcurrentSink(next, 1, 1, time.Millisecond, quietLog)
		_, err := c.Patch(event("a"), []byte(`{}`))
		require.NoError(t, err)
		c.close(context.Background())
		assert.Equal(t, []string{"create ns/a"}, next.snapshot())
	})
}

// TestConcurrentSinkCloseIsBounded: close gives up waiting when its
// context ends (a writer stuck on the API server).
func TestConcurrentSinkCloseIsBounded(t *testing.T) {
	next := &recordingSink{seen: map[string]bool{}, blockedCh: make(chan struct{})}
	c := newConcurrentSink(next, 1, 1, time.Millisecond, quietLog)
	_, err := c.Create(event("a"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c.close(ctx)
	close(next.blockedCh)
	c.wg.Wait()
	assert.Equal(t, []string{"create ns/a"}, next.snapshot())
}

// TestConcurrentSinkCloseWhileASenderWaits: a sender blocked on a full
// queue while the sink closes gives up with the sink's error, and close
// neither deadlocks nor panics.
func TestConcurrentSinkCloseWhileASenderWaits(t *testing.T) {
	next := &recordingSink{seen: map[string]bool{}, blockedCh: make(chan struct{})}
	c := newConcurrentSink(next, 1, 1, time.Millisecond, quietLog)
	_, err := c.Create(event("a")) // taken by the writer, which blocks in next
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(c.queues[0]) == 0 }, 5*time.Second, time.Millisecond)
	_, err = c.Create(event("b")) // fills the queue
	require.NoError(t, err)
	sent := make(chan error, 1)
	go func() { _, err := c.Create(event("c")); sent <- err }() // blocks: queue full
	closed := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.close(ctx)
		close(closed)
	}()
	select {
	case err := <-sent:
		require.Error(t, err, "the waiting sender is refused once the sink closes")
	case <-time.After(10 * time.Second):
		t.Fatal("a sender blocked on a full queue was not released by close")
	}
	close(next.blockedCh)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return")
	}
	assert.Equal(t, []string{"create ns/a", "create ns/b"}, next.snapshot())
	_, err = c.Create(event("d"))
	assert.Error(t, err, "closed")
}
