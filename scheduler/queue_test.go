package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func qpod(name string, priority int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Priority: &priority, Containers: []corev1.Container{{Name: "c"}}},
	}
}

func newTestQueue(cfg QueueConfig) (*Queue, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	cfg.Clock = clk
	return NewQueue(cfg), clk
}

func popName(t *testing.T, q *Queue) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := q.Pop(ctx)
	require.NoError(t, err)
	return p.Pod.Name
}

func TestQueueOrderPriorityThenArrival(t *testing.T) {
	q, clk := newTestQueue(QueueConfig{})
	for _, p := range []struct {
		name string
		prio int32
	}{{"low-1", 0}, {"high-1", 100}, {"low-2", 0}, {"mid", 50}, {"high-2", 100}} {
		q.Add(qpod(p.name, p.prio))
		clk.Step(time.Millisecond)
	}
	var got []string
	for range 5 {
		got = append(got, popName(t, q))
	}
	assert.Equal(t, []string{"high-1", "high-2", "mid", "low-1", "low-2"}, got)
}

func TestQueueBackoffDuration(t *testing.T) {
	q, _ := newTestQueue(QueueConfig{})
	tests := []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second}, {5, 10 * time.Second}, {30, 10 * time.Second}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, q.BackoffDuration(tt.attempts), "attempts %d", tt.attempts)
	}
	q2, _ := newTestQueue(QueueConfig{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	assert.Equal(t, 200*time.Millisecond, q2.BackoffDuration(2))
	assert.Equal(t, 300*time.Millisecond, q2.BackoffDuration(3))
}

func TestQueueErrorBacksOffThenRetries(t *testing.T) {
	q, clk := newTestQueue(QueueConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	q.Add(qpod("p", 0))
	p, err := q.Pop(ctx)
	require.NoError(t, err)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), false)
	a, b, u, _ := q.Len()
	assert.Equal(t, []int{0, 1, 0}, []int{a, b, u})

	waitForTimer(t, clk)
	clk.Step(999 * time.Millisecond)
	a, _, _, _ = q.Len()
	assert.Equal(t, 0, a, "still backing off")
	clk.Step(time.Millisecond)
	assert.Equal(t, "p", popName(t, q))
}

// waitForTimer waits until the queue's flusher sleeps on the fake clock.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
}

func TestQueueUnschedulableWaitsForEvent(t *testing.T) {
	var helps bool
	q, clk := newTestQueue(QueueConfig{EventMatches: func(*QueuedPodInfo, ClusterEvent) bool { return helps }})
	q.Add(qpod("p", 0))
	p, _ := q.Pop(context.Background())
	p.UnschedulablePlugins = map[string]bool{"X": true}
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), true)
	_, _, u, _ := q.Len()
	assert.Equal(t, 1, u)

	// An event the rejecting plugin does not care about leaves it.
	q.MoveAllToActiveOrBackoffQueue(NodeAdd)
	_, _, u, _ = q.Len()
	assert.Equal(t, 1, u)

	// A helpful event during its backoff moves it to backoff.
	helps = true
	q.MoveAllToActiveOrBackoffQueue(NodeAdd)
	a, b, u, _ := q.Len()
	assert.Equal(t, []int{0, 1, 0}, []int{a, b, u})

	// After the backoff a helpful event moves it straight to active.
	q.Delete(p.Pod)
	q.Add(qpod("p2", 0))
	p, _ = q.Pop(context.Background())
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), true)
	clk.Step(2 * time.Second)
	q.MoveAllToActiveOrBackoffQueue(NodeAdd)
	assert.Equal(t, "p2", popName(t, q))
}

func TestQueueMoveRequestDuringAttempt(t *testing.T) {
	q, _ := newTestQueue(QueueConfig{})
	q.Add(qpod("p", 0))
	p, _ := q.Pop(context.Background())
	cycle := q.SchedulingCycle()
	// A node appears while the pod is being scheduled: the failure must
	// not park it waiting for another event.
	q.MoveAllToActiveOrBackoffQueue(NodeAdd)
	q.AddUnschedulableIfNotPresent(p, cycle, true)
	_, b, u, _ := q.Len()
	assert.Equal(t, []int{1, 0}, []int{b, u})
}

func TestQueueUpdate(t *testing.T) {
	q, clk := newTestQueue(QueueConfig{})
	old := qpod("p", 0)
	q.Add(old)
	p, _ := q.Pop(context.Background())
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), true)

	// A status-only change (our own condition) leaves it waiting.
	statusOnly := old.DeepCopy()
	statusOnly.ResourceVersion = "2"
	statusOnly.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
	q.Update(old, statusOnly)
	_, _, u, _ := q.Len()
	assert.Equal(t, 1, u)

	// A spec change retries it (after its backoff).
	changed := statusOnly.DeepCopy()
	changed.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	q.Update(statusOnly, changed)
	_, b, u, _ := q.Len()
	assert.Equal(t, []int{1, 0}, []int{b, u})
	clk.Step(time.Second)
	q.mu.Lock()
	q.flush()
	q.mu.Unlock()
	p, err := q.Pop(context.Background())
	require.NoError(t, err)
	assert.Len(t, p.Pod.Spec.Tolerations, 1, "the updated pod is scheduled")

	// An update of a pod being scheduled queues it again; the attempt
	// in flight then does not add a duplicate.
	q.Update(p.Pod, changed)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), true)
	a, b, u, _ := q.Len()
	assert.Equal(t, []int{1, 0, 0}, []int{a, b, u})
}

func TestQueueGated(t *testing.T) {
	errGated := errors.New("gated")
	q, _ := newTestQueue(QueueConfig{PreEnqueue: func(p *corev1.Pod) error {
		if len(p.Spec.SchedulingGates) > 0 {
			return errGated
		}
		return nil
	}})
	p := qpod("p", 0)
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "x"}}
	q.Add(p)
	a, _, _, g := q.Len()
	assert.Equal(t, []int{0, 1}, []int{a, g})
	q.MoveAllToActiveOrBackoffQueue(AllEvents)
	_, _, _, g = q.Len()
	assert.Equal(t, 1, g, "cluster events do not ungate")
	ungated := p.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	q.Update(p, ungated)
	assert.Equal(t, "p", popName(t, q))
}

func TestQueueLeftoverUnschedulable(t *testing.T) {
	q, clk := newTestQueue(QueueConfig{MaxInUnschedulable: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	q.Add(qpod("p", 0))
	p, _ := q.Pop(ctx)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle(), true)
	waitForTimer(t, clk)
	clk.Step(59 * time.Second)
	_, _, u, _ := q.Len()
	assert.Equal(t, 1, u)
	waitForTimer(t, clk)
	clk.Step(time.Second)
	assert.Equal(t, "p", popName(t, q))
}

func TestQueuePopBlocksUntilAddOrClose(t *testing.T) {
	q, _ := newTestQueue(QueueConfig{})
	got := make(chan string)
	go func() {
		p, err := q.Pop(context.Background())
		if err != nil {
			got <- err.Error()
			return
		}
		got <- p.Pod.Name
	}()
	q.Add(qpod("late", 0))
	assert.Equal(t, "late", <-got)

	go func() {
		_, err := q.Pop(context.Background())
		got <- fmt.Sprint(errors.Is(err, ErrQueueClosed))
	}()
	q.Close()
	assert.Equal(t, "true", <-got)

	q2, _ := newTestQueue(QueueConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := q2.Pop(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestQueueDeleteAndSizes(t *testing.T) {
	var sizes [4]int
	q, _ := newTestQueue(QueueConfig{OnChange: func(a, b, u, g int) { sizes = [4]int{a, b, u, g} }})
	q.Add(qpod("a", 0))
	q.Add(qpod("b", 0))
	assert.Equal(t, [4]int{2, 0, 0, 0}, sizes)
	q.Delete(qpod("a", 0))
	assert.Equal(t, [4]int{1, 0, 0, 0}, sizes)
	assert.Len(t, q.PendingPods(), 1)
}

func TestQueueIrrelevantEventDuringAttempt(t *testing.T) {
	q, _ := newTestQueue(QueueConfig{EventMatches: func(_ *QueuedPodInfo, ev ClusterEvent) bool { return ev == NodeAdd }})
	q.Add(qpod("p", 0))
	p, _ := q.Pop(context.Background())
	cycle := q.SchedulingCycle()
	// A pod bound elsewhere cannot help this pod: it waits for an event.
	q.MoveAllToActiveOrBackoffQueue(PodAdd)
	q.AddUnschedulableIfNotPresent(p, cycle, true)
	_, b, u, _ := q.Len()
	assert.Equal(t, []int{0, 1}, []int{b, u})
	assert.Equal(t, ClusterEvent(1<<eventKinds-1), AllEvents, "eventKinds covers every event")
}
