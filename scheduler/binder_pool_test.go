package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// countingBinder records the pods bound and the binds running at once.
type countingBinder struct {
	mu           sync.Mutex
	bound        map[string]string
	running, max int
}

func (b *countingBinder) Bind(_ context.Context, pod *corev1.Pod, node string) error {
	b.mu.Lock()
	b.running++
	b.max = max(b.max, b.running)
	b.mu.Unlock()
	time.Sleep(time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running--
	b.bound[pod.Name] = node
	return nil
}

// TestBinderGoroutinesAreReused: binding cycles run on reused binder
// goroutines, at most twice the binding slots of them, never more binds
// at once than slots; the binders leave when the context ends.
func TestBinderGoroutinesAreReused(t *testing.T) {
	b := &countingBinder{bound: map[string]string{}}
	s := newTestScheduler(t, []Profile{{Binder: b, Plugins: []PluginSpec{{Name: "s", Plugin: scoreByName{}}}}}, WithMaxInFlightBindings(3))
	s.cache.AddNode(cnode("n1", "", "100"))
	const pods = 40
	for i := range pods {
		s.queue.Add(cpod(fmt.Sprintf("p%02d", i), "", ""))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range pods {
		require.NoError(t, s.ScheduleOne(ctx))
		assert.LessOrEqual(t, int(s.binders.Load()), 6)
	}
	s.inflight.Wait()
	b.mu.Lock()
	assert.Len(t, b.bound, pods)
	assert.LessOrEqual(t, b.max, 3)
	b.mu.Unlock()
	assert.Positive(t, s.binders.Load(), "idle binders wait for the next job")

	cancel()
	require.Eventually(t, func() bool { return s.binders.Load() == 0 }, 10*time.Second, 5*time.Millisecond)
}
