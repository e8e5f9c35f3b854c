package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cnode(name, zone, cpu string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}
	return n
}

func cpod(name, node, cpu string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

func requestedCPU(t *testing.T, s *Snapshot, node string) int64 {
	t.Helper()
	ni, err := s.Get(node)
	require.NoError(t, err)
	return ni.Requested.MilliCPU
}

func TestCacheAssumeConfirmForget(t *testing.T) {
	c := NewCache()
	c.AddNode(cnode("n1", "", "4"))
	c.AddNode(cnode("n2", "", "4"))
	s := NewEmptySnapshot()

	p := cpod("p", "n1", "1")
	require.NoError(t, c.AssumePod(p))
	assert.True(t, c.IsAssumedPod(p))
	c.UpdateSnapshot(s)
	assert.Equal(t, int64(1000), requestedCPU(t, s, "n1"), "an assumed pod counts at once")
	require.Error(t, c.AssumePod(p), "assuming twice")

	// Forget after a failed bind.
	require.NoError(t, c.ForgetPod(p))
	assert.False(t, c.IsAssumedPod(p))
	c.UpdateSnapshot(s)
	assert.Equal(t, int64(0), requestedCPU(t, s, "n1"))
	require.ErrorIs(t, c.ForgetPod(p), ErrNotFound)

	// Confirm by the informer: still counted once.
	require.NoError(t, c.AssumePod(p))
	require.NoError(t, c.AddPod(p))
	assert.False(t, c.IsAssumedPod(p))
	c.UpdateSnapshot(s)
	assert.Equal(t, int64(1000), requestedCPU(t, s, "n1"))
	_, pods, assumed := c.Counts()
	assert.Equal(t, []int{1, 0}, []int{pods, assumed})

	// Confirmed on another node than assumed: moves.
	q := cpod("q", "n1", "2")
	require.NoError(t, c.AssumePod(q))
	bound := cpod("q", "n2", "2")
	require.NoError(t, c.AddPod(bound))
	c.UpdateSnapshot(s)
	assert.Equal(t, int64(1000), requestedCPU(t, s, "n1"))
	assert.Equal(t, int64(2000), requestedCPU(t, s, "n2"))

	require.NoError(t, c.RemovePod(bound))
	c.UpdateSnapshot(s)
	assert.Equal(t, int64(0), requestedCPU(t, s, "n2"))
}

func TestCacheSnapshotIncremental(t *testing.T) {
	c := NewCache()
	for _, n := range []*corev1.Node{cnode("a1", "a", "4"), cnode("a2", "a", "4"), cnode("b1", "b", "4"), cnode("c1", "c", "4")} {
		c.AddNode(n)
	}
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	var names []string
	for _, ni := range s.List() {
		names = append(names, ni.Name())
	}
	assert.Equal(t, []string{"a1", "b1", "c1", "a2"}, names, "zones interleave")

	a1, _ := s.Get("a1")
	b1, _ := s.Get("b1")
	require.NoError(t, c.AddPod(cpod("p", "a1", "1")))
	c.UpdateSnapshot(s)
	same, _ := s.Get("a1")
	assert.Same(t, a1, same, "snapshot entries are updated in place")
	assert.Len(t, same.Pods, 1)
	assert.Empty(t, b1.Pods)

	// Node removal: gone from the snapshot; its pods stay counted until
	// removed, and the node can come back.
	require.NoError(t, c.RemoveNode(cnode("a1", "a", "4")))
	c.UpdateSnapshot(s)
	assert.Equal(t, 3, s.NumNodes())
	_, err := s.Get("a1")
	assert.ErrorIs(t, err, ErrNotFound)
	c.AddNode(cnode("a1", "a", "4"))
	c.UpdateSnapshot(s)
	assert.Equal(t, 4, s.NumNodes())
	assert.Equal(t, int64(1000), requestedCPU(t, s, "a1"))
	require.ErrorIs(t, c.RemoveNode(cnode("zz", "", "1")), ErrNotFound)
}

func TestCacheAffinityListsAndImages(t *testing.T) {
	c := NewCache()
	n := cnode("n", "", "4")
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"nginx:1.25"}, SizeBytes: 100}}
	c.AddNode(n)
	m := cnode("m", "", "4")
	m.Status.Images = []corev1.ContainerImage{{Names: []string{"nginx:1.25", "redis"}, SizeBytes: 100}}
	c.AddNode(m)
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	assert.Equal(t, 2, s.ImageNumNodes("nginx:1.25"))
	assert.Equal(t, 1, s.ImageNumNodes("redis:latest"))
	assert.Empty(t, s.HavePodsWithRequiredAntiAffinityList())

	p := cpod("anti", "n", "")
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{}, TopologyKey: corev1.LabelHostname}}}}
	require.NoError(t, c.AddPod(p))
	c.UpdateSnapshot(s)
	require.Len(t, s.HavePodsWithRequiredAntiAffinityList(), 1)
	assert.Equal(t, "n", s.HavePodsWithRequiredAntiAffinityList()[0].Name())
	assert.Len(t, s.HavePodsWithAffinityList(), 1)
	require.NoError(t, c.RemovePod(p))
	c.UpdateSnapshot(s)
	assert.Empty(t, s.HavePodsWithRequiredAntiAffinityList())

	require.NoError(t, c.RemoveNode(m))
	c.UpdateSnapshot(s)
	assert.Equal(t, 1, s.ImageNumNodes("nginx:1.25"))
	assert.Equal(t, 0, s.ImageNumNodes("redis:latest"))
}
