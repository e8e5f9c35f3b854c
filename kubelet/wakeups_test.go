package kubelet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// kicked says whether w was woken (and takes the wake-up).
func kicked(w *podWorker) bool {
	select {
	case <-w.signal:
		return true
	default:
		return false
	}
}

// waitKicked waits until w is woken.
func waitKicked(t *testing.T, w *podWorker) {
	t.Helper()
	select {
	case <-w.signal:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker was never woken")
	}
}

// One timer wakes every worker at the time it asked for, the latest
// request replacing the earlier, a past time at once; cancelled workers
// are not woken.
func TestWakeups(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := newWakeups(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.run(ctx) }()
	defer func() { cancel(); <-done }()
	worker := func() *podWorker { return &podWorker{signal: make(chan struct{}, 1), wakeIndex: -1} }
	a, b, gone, now := worker(), worker(), worker(), worker()

	s.schedule(a, c.Now().Add(10*time.Second))
	s.schedule(b, c.Now().Add(5*time.Second))
	s.schedule(b, c.Now().Add(20*time.Second)) // replaces 5 s
	s.schedule(gone, c.Now().Add(time.Second))
	s.cancel(gone)
	s.schedule(now, c.Now())
	assert.True(t, kicked(now), "a time that has come wakes at once")

	require.Eventually(t, c.HasWaiters, 30*time.Second, time.Millisecond)
	c.Step(6 * time.Second)
	c.Step(4 * time.Second)
	waitKicked(t, a)
	assert.False(t, kicked(b), "b asked for 20 s at last")
	assert.False(t, kicked(gone))
	c.Step(10 * time.Second)
	waitKicked(t, b)
	assert.False(t, kicked(a), "a is woken once")

	s.mu.Lock()
	assert.Empty(t, s.heap)
	s.mu.Unlock()
	for _, w := range []*podWorker{a, b, gone, now} {
		assert.Equal(t, -1, w.wakeIndex)
	}
}
