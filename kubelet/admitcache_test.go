package kubelet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/scheduler"
)

func admitCachePod(uid, cpu string, port int32) *corev1.Pod {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	if port != 0 {
		c.Ports = []corev1.ContainerPort{{HostPort: port, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// The cache's NodeInfo counts exactly what scheduler.NewNodeInfo counts,
// reuses a PodInfo only for the same pod object, and forgets pods that
// are no longer on the node.
func TestPodInfoCache(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}}}
	a, b := admitCachePod("a", "500m", 8080), admitCachePod("b", "1", 0)
	var c podInfoCache

	check := func(pods ...*corev1.Pod) *scheduler.NodeInfo {
		t.Helper()
		got, want := c.nodeInfo(node, pods), scheduler.NewNodeInfo(node, pods...)
		assert.Equal(t, want.Requested, got.Requested)
		assert.Equal(t, want.NonZeroRequested, got.NonZeroRequested)
		assert.Equal(t, want.Allocatable, got.Allocatable)
		require.Len(t, got.Pods, len(pods))
		for i := range pods {
			assert.Same(t, pods[i], got.Pods[i].Pod)
		}
		return got
	}
	first := check(a, b)
	again := check(a, b)
	assert.Same(t, first.Pods[0], again.Pods[0], "the same pod object reuses its PodInfo")

	resized := admitCachePod("a", "2", 8080) // an update: a new object
	after := check(resized, b)
	assert.NotSame(t, first.Pods[0], after.Pods[0])
	assert.Equal(t, int64(3000), after.Requested.MilliCPU)

	check(b)
	c.mu.Lock()
	_, kept := c.infos["a"]
	c.mu.Unlock()
	assert.False(t, kept, "a pod gone from the node is forgotten")
}
