package replicaset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/controller"
)

func TestUnchangedForSync(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	ready := func(p *corev1.Pod, st corev1.ConditionStatus, at metav1.Time) *corev1.Pod {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: st, LastTransitionTime: at})
		return p
	}
	for name, tc := range map[string]struct {
		cur  func(*corev1.Pod)
		same bool
	}{
		"bound to a node": {func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		}, true},
		"container statuses only": {func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app"}}
		}, true},
		"phase":    {func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
		"ready":    {func(p *corev1.Pod) { ready(p, corev1.ConditionTrue, t0) }, false},
		"deleting": {func(p *corev1.Pod) { p.DeletionTimestamp = &t0 }, false},
	} {
		t.Run(name, func(t *testing.T) {
			old, cur := base(), base()
			tc.cur(cur)
			assert.Equal(t, tc.same, unchangedForSync(old, cur))
		})
	}
	t.Run("ready transition time", func(t *testing.T) {
		old := ready(base(), corev1.ConditionTrue, t0)
		cur := ready(base(), corev1.ConditionTrue, metav1.NewTime(t0.Add(time.Second)))
		assert.False(t, unchangedForSync(old, cur))
		assert.True(t, unchangedForSync(old, ready(base(), corev1.ConditionTrue, t0)))
	})
}

// A sync starts from the last status write's result while the informer
// still holds a copy that write (or an earlier one of the same chain)
// replaced, and from the informer's copy otherwise.
func TestLastWrites(t *testing.T) {
	rs := func(rv string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", UID: types.UID("u"), ResourceVersion: rv}}
	}
	var l lastWrites
	r1, r2, r3 := rs("1"), rs("2"), rs("3")
	assert.Same(t, r1, l.fresh("ns/rs", r1), "nothing written yet")

	l.record("ns/rs", r1, r2)
	assert.Same(t, r2, l.fresh("ns/rs", r1), "the informer has not seen the write")
	l.record("ns/rs", r2, r3) // a write started from the last one's result
	assert.Same(t, r3, l.fresh("ns/rs", r1), "still two writes behind")
	assert.Same(t, r3, l.fresh("ns/rs", rs("2")), "one write behind")

	newer := rs("4") // someone else wrote: the informer's copy is not one replaced
	assert.Same(t, newer, l.fresh("ns/rs", newer))
	assert.Same(t, r1, l.fresh("ns/rs", r1), "forgotten once the informer moved on")

	l.record("ns/rs", r1, r2)
	other := rs("1")
	other.UID = "another"
	assert.Same(t, other, l.fresh("ns/rs", other), "a new ReplicaSet of the same name")
	l.record("ns/rs", r1, r2)
	l.forget("ns/rs")
	assert.Same(t, r1, l.fresh("ns/rs", r1))
	l.record("ns/rs", r1, r1)
	assert.Same(t, r1, l.fresh("ns/rs", r1), "no write, nothing remembered")
}

// While creations are expected, a pod change syncs after the pending
// delay; the change that meets the expectations, and any change after,
// syncs at once.
func TestQueuePodChange(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	rc := &Controller{
		expectations: controller.NewUIDTrackingExpectations(clk),
		queue:        controller.NewQueueWithClock[string]("test", clk),
		pendingDelay: time.Second,
	}
	defer rc.queue.ShutDown()
	const key = "ns/rs"
	take := func() {
		t.Helper()
		k, _ := rc.queue.Get()
		rc.queue.Done(k)
	}
	rc.expectations.ExpectCreations(key, 2)

	rc.expectations.CreationObserved(key)
	rc.queuePodChange(key)
	assert.Zero(t, rc.queue.Len(), "still expecting a creation: delayed")
	clk.Step(time.Second)
	assert.Eventually(t, func() bool { return rc.queue.Len() == 1 }, 30*time.Second, time.Millisecond, "queued after the delay")
	take()

	rc.expectations.CreationObserved(key) // the last one expected
	rc.queuePodChange(key)
	assert.Equal(t, 1, rc.queue.Len(), "expectations met: at once")
	take()

	rc.pendingDelay = 0
	rc.expectations.ExpectCreations(key, 1)
	rc.queuePodChange(key)
	assert.Equal(t, 1, rc.queue.Len(), "no delay configured: at once, as Kubernetes")
}
