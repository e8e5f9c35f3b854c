package admission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func TestNodeRestriction(t *testing.T) {
	st := memory.New()
	defer st.Close()
	p, err := NewNodeRestriction(NodeRestrictionConfig{Pods: st})
	require.NoError(t, err)
	nodeA := &auth.DefaultUser{Name: "system:node:node-a", Groups: []string{"system:nodes"}}
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	leases := coordinationv1.SchemeGroupVersion.WithResource("leases")
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	pod := func(nodeName string, mirror bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: nodeName}}
		if mirror {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}
		return p
	}
	tests := []struct {
		name string
		a    Attributes
		err  string
	}{
		{"register itself", Attributes{Operation: Create, Resource: nodes, Object: node("node-a", map[string]string{"kubernetes.io/hostname": "node-a", "node.kubernetes.io/instance-type": "x", "example.com/team": "a"})}, ""},
		{"register another", Attributes{Operation: Create, Resource: nodes, Object: node("node-b", nil)}, `nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"`},
		{"restricted label at registration", Attributes{Operation: Create, Resource: nodes, Object: node("node-a", map[string]string{"node-restriction.kubernetes.io/pool": "x", "node-role.kubernetes.io/control-plane": ""})},
			`nodes "node-a" is forbidden: node "node-a" is not allowed to set the following labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/control-plane`},
		{"relabel itself", Attributes{Operation: Update, Resource: nodes, Name: "node-a", Object: node("node-a", map[string]string{"node-role.kubernetes.io/master": ""}), OldObject: node("node-a", nil)},
			`nodes "node-a" is forbidden: node "node-a" is not allowed to modify labels: node-role.kubernetes.io/master`},
		{"kept label is fine", Attributes{Operation: Update, Resource: nodes, Name: "node-a", Object: node("node-a", map[string]string{"node-role.kubernetes.io/master": ""}), OldObject: node("node-a", map[string]string{"node-role.kubernetes.io/master": ""})}, ""},
		{"untaint itself", Attributes{Operation: Update, Resource: nodes, Name: "node-a", Object: node("node-a", nil), OldObject: node("node-a", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule})},
			`nodes "node-a" is forbidden: node "node-a" is not allowed to modify taints`},
		{"update another node", Attributes{Operation: Update, Resource: nodes, Subresource: "status", Name: "node-b", Object: node("node-b", nil), OldObject: node("node-b", nil)}, `node "node-a" is not allowed to modify node "node-b"`},
		{"ordinary pod", Attributes{Operation: Create, Resource: pods, Namespace: "ns", Object: pod("node-a", false)}, `node "node-a" can only create mirror pods`},
		{"mirror pod", Attributes{Operation: Create, Resource: pods, Namespace: "ns", Object: pod("node-a", true)}, ""},
		{"mirror pod elsewhere", Attributes{Operation: Create, Resource: pods, Namespace: "ns", Object: pod("node-b", true)}, `node "node-a" can only create pods with spec.nodeName set to itself`},
		{"own pod status", Attributes{Operation: Update, Resource: pods, Subresource: "status", Namespace: "ns", Name: "p", Object: pod("node-a", false), OldObject: pod("node-a", false)}, ""},
		{"other pod status", Attributes{Operation: Update, Resource: pods, Subresource: "status", Namespace: "ns", Name: "p", Object: pod("node-b", false), OldObject: pod("node-b", false)}, `node "node-a" can only update pod status for pods with spec.nodeName set to itself`},
		{"pod spec update", Attributes{Operation: Update, Resource: pods, Namespace: "ns", Name: "p", Object: pod("node-a", false), OldObject: pod("node-a", false)}, `unexpected operation "UPDATE"`},
		{"delete other pod", Attributes{Operation: Delete, Resource: pods, Namespace: "ns", Name: "p", OldObject: pod("node-b", false)}, `node "node-a" can only delete pods with spec.nodeName set to itself`},
		{"own lease", Attributes{Operation: Update, Resource: leases, Namespace: "kube-node-lease", Name: "node-a", Object: &coordinationv1.Lease{}}, ""},
		{"other lease", Attributes{Operation: Update, Resource: leases, Namespace: "kube-node-lease", Name: "node-b", Object: &coordinationv1.Lease{}}, "can only access node lease with the same name as the requesting node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			a.User = nodeA
			err := p.Validate(context.Background(), &a)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err))
			assert.Contains(t, err.Error(), tt.err)
		})
	}
	// Other users pass.
	a := Attributes{Operation: Create, Resource: nodes, Object: node("node-b", map[string]string{"node-restriction.kubernetes.io/x": ""}),
		User: &auth.DefaultUser{Name: "admin", Groups: []string{auth.GroupMasters}}}
	assert.NoError(t, p.Validate(context.Background(), &a))
}
