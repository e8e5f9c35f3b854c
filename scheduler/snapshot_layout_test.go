package scheduler

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSnapshotPlacesNewNodesInTreeOrder: nodes that reach the snapshot
// together sit in one array in the order cycles walk them; updates keep
// their addresses; nodes added later get their own place.
func TestSnapshotPlacesNewNodesInTreeOrder(t *testing.T) {
	c := NewCache()
	for i := range 12 {
		c.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%02d", i),
			Labels: map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("z%d", i%3)}}})
	}
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	list := s.List()
	require.Len(t, list, 12)
	size := unsafe.Sizeof(NodeInfo{})
	for i := 1; i < len(list); i++ {
		assert.Equal(t, uintptr(unsafe.Pointer(list[i-1]))+size, uintptr(unsafe.Pointer(list[i])),
			"node %d (%s) follows node %d in memory", i, list[i].Name(), i-1)
	}

	before := list[5]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{NodeName: before.Name()}}
	require.NoError(t, c.AddPod(pod))
	c.UpdateSnapshot(s)
	ni, err := s.Get(before.Name())
	require.NoError(t, err)
	assert.Same(t, before, ni, "an update overwrites the NodeInfo in place")
	assert.Len(t, ni.Pods, 1)
	assert.Equal(t, "u1", string(ni.Pods[0].Pod.UID))

	c.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "late"}})
	c.UpdateSnapshot(s)
	require.Len(t, s.List(), 13)
	late, err := s.Get("late")
	require.NoError(t, err)
	assert.Equal(t, "late", late.Name())
	assert.Same(t, before, s.nodeInfoMap[before.Name()])
}

// TestSnapshotHoldsAndPodsOn: the snapshot tells its own NodeInfos from
// copies, and groups count their pods per held NodeInfo.
func TestSnapshotHoldsAndPodsOn(t *testing.T) {
	c := NewCache()
	for _, n := range []string{"a", "b"} {
		c.AddNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{corev1.LabelHostname: n}}})
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{NodeName: "a"}}
	require.NoError(t, c.AddPod(p))
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	a, err := s.Get("a")
	require.NoError(t, err)
	b, err := s.Get("b")
	require.NoError(t, err)
	assert.True(t, s.Holds(a))
	assert.False(t, s.Holds(a.Clone()))
	assert.False(t, NewEmptySnapshot().Holds(a))
	assert.False(t, s.Holds(nil))

	require.Len(t, s.PodGroups(), 1)
	for _, g := range s.PodGroups() {
		assert.Equal(t, int32(1), g.PodsOn(a))
		assert.Equal(t, int32(0), g.PodsOn(b))
	}
	// An update in place keeps the NodeInfo held.
	require.NoError(t, c.AddPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "u2"}, Spec: corev1.PodSpec{NodeName: "a"}}))
	c.UpdateSnapshot(s)
	assert.True(t, s.Holds(a))
	assert.True(t, NewSnapshot(nil, []*corev1.Node{a.Node()}).List()[0].snapshot != nil)
}

func TestKeyIdentifiesNodes(t *testing.T) {
	mk := func(name string, labels ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		for i := 0; i+1 < len(labels); i += 2 {
			n.Labels[labels[i]] = labels[i+1]
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  bool
	}{
		{"distinct values on every node", []*corev1.Node{mk("a", "k", "1"), mk("b", "k", "2")}, true},
		{"a shared value", []*corev1.Node{mk("a", "k", "1"), mk("b", "k", "1")}, false},
		{"a node without the key", []*corev1.Node{mk("a", "k", "1"), mk("b")}, false},
		{"no nodes", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, NewSnapshot(nil, tc.nodes).KeyIdentifiesNodes("k"))
		})
	}
}
