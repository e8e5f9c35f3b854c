package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeInfoKeepsSchedulingFieldsOfItsNode: the node fields the Filter
// and Score plugins read from NodeInfo follow SetNode and survive Clone.
func TestNodeInfoKeepsSchedulingFieldsOfItsNode(t *testing.T) {
	taints := []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name string
		node *corev1.Node
	}{
		{"plain", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
		{"cordoned and tainted", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec: corev1.NodeSpec{Unschedulable: true, Taints: taints}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := NewNodeInfo(tc.node)
			for _, got := range []*NodeInfo{n, n.Clone()} {
				assert.Equal(t, tc.node.Name, got.Name())
				assert.Equal(t, tc.node.Spec.Unschedulable, got.Unschedulable())
				assert.Equal(t, tc.node.Spec.Taints, got.Taints())
			}
			n.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.node.Name}})
			assert.False(t, n.Unschedulable())
			assert.Empty(t, n.Taints())
		})
	}
}
