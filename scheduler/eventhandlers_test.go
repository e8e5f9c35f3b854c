package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestDeletePendingPodForgetsOnlyRealDeletes(t *testing.T) {
	s := newTestScheduler(t, []Profile{{Plugins: []PluginSpec{{Name: "s", Plugin: scoreByName{}}}}})
	s.cache.AddNode(cnode("n1", "", "4"))
	indexer := s.informers.InformerFor(&corev1.Pod{}, nil).GetIndexer()

	// Bound meanwhile: the informer's store has the pod, the cache keeps it.
	bound := cpod("bound", "n1", "1")
	require.NoError(t, s.cache.AssumePod(bound))
	require.NoError(t, indexer.Add(bound))
	pending := bound.DeepCopy()
	pending.Spec.NodeName = ""
	s.deletePendingPod(pending)
	assert.True(t, s.cache.IsAssumedPod(bound))

	// Deleted while its bind was in flight: the assumption is dropped.
	gone := cpod("gone", "n1", "1")
	require.NoError(t, s.cache.AssumePod(gone))
	s.deletePendingPod(cache.DeletedFinalStateUnknown{Obj: gone}.Obj.(*corev1.Pod))
	assert.False(t, s.cache.IsAssumedPod(gone))
	_, pods, _ := s.cache.Counts()
	assert.Equal(t, 1, pods)
}

func TestNodeSchedulingPropertiesChanged(t *testing.T) {
	base := cnode("n", "a", "4")
	base.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	tests := []struct {
		name   string
		mutate func(*corev1.Node)
		want   bool
	}{
		{"heartbeat only", func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Unix(99, 0))
			n.ResourceVersion = "7"
		}, false},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("8") }, true},
		{"labels", func(n *corev1.Node) { n.Labels["x"] = "y" }, true},
		{"taints", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }, true},
		{"ready condition", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"images", func(n *corev1.Node) { n.Status.Images = []corev1.ContainerImage{{Names: []string{"x"}}} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.mutate(n)
			assert.Equal(t, tt.want, nodeSchedulingPropertiesChanged(base, n))
		})
	}
}

// blockingBinder holds every bind until released.
type blockingBinder struct {
	started chan string
	release chan struct{}
}

func (b *blockingBinder) Bind(ctx context.Context, pod *corev1.Pod, _ string) error {
	b.started <- pod.Name
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestBindingBackpressureAndShutdown(t *testing.T) {
	b := &blockingBinder{started: make(chan string, 10), release: make(chan struct{})}
	s := newTestScheduler(t, []Profile{{Binder: b, Plugins: []PluginSpec{{Name: "s", Plugin: scoreByName{}}}}}, WithMaxInFlightBindings(1))
	s.cache.AddNode(cnode("n1", "", "4"))
	s.queue.Add(cpod("a", "", ""))
	s.queue.Add(cpod("b", "", ""))
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, s.ScheduleOne(ctx))
	assert.Equal(t, "a", <-b.started)

	// The second pod waits for the only binding slot.
	second := make(chan error, 1)
	go func() { second <- s.ScheduleOne(ctx) }()
	select {
	case <-b.started:
		t.Fatal("second bind started while the first holds the only slot")
	case <-time.After(50 * time.Millisecond):
	}
	b.release <- struct{}{}
	require.NoError(t, <-second)
	assert.Equal(t, "b", <-b.started)

	// Cancelling stops the bind in flight; the assumption is forgotten.
	cancel()
	s.inflight.Wait()
	_, pods, assumed := s.cache.Counts()
	// a was bound (still assumed: no informer here confirms it); b forgotten.
	assert.Equal(t, []int{1, 1}, []int{pods, assumed})
	assert.True(t, s.cache.IsAssumedPod(cpod("a", "n1", "")))
}
