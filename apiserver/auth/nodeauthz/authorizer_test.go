package nodeauthz

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func TestNodeAuthorizer(t *testing.T) {
	st := memory.New()
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.PodSpec{
		NodeName: "node-a", ServiceAccountName: "web-sa", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}}}}}},
		Volumes: []corev1.Volume{
			{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}}}}}},
		},
	}}
	_, err := st.Create(ctx, storage.Key(schema.GroupResource{Resource: "pods"}, "ns", "web"), pod)
	require.NoError(t, err)
	a, err := New(Config{Pods: st, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	go a.Run(ctx)
	nodeA := &auth.DefaultUser{Name: "system:node:node-a", Groups: []string{GroupNodes}}
	nodeB := &auth.DefaultUser{Name: "system:node:node-b", Groups: []string{GroupNodes}}
	res := func(u auth.User, verb, group, resource, sub, ns, name string) auth.Attributes {
		return auth.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	tests := []struct {
		name  string
		attrs auth.Attributes
		want  auth.Decision
	}{
		{"image pull secret", res(nodeA, "get", "", "secrets", "", "ns", "pull"), auth.DecisionAllow},
		{"env secret", res(nodeA, "get", "", "secrets", "", "ns", "env-secret"), auth.DecisionAllow},
		{"watch one secret", res(nodeA, "watch", "", "secrets", "", "ns", "env-secret"), auth.DecisionAllow},
		{"other node's view", res(nodeB, "get", "", "secrets", "", "ns", "pull"), auth.DecisionNoOpinion},
		{"unreferenced secret", res(nodeA, "get", "", "secrets", "", "ns", "other"), auth.DecisionNoOpinion},
		{"list secrets", res(nodeA, "list", "", "secrets", "", "ns", ""), auth.DecisionNoOpinion},
		{"write secret", res(nodeA, "update", "", "secrets", "", "ns", "pull"), auth.DecisionNoOpinion},
		{"env config map", res(nodeA, "get", "", "configmaps", "", "ns", "env-cm"), auth.DecisionAllow},
		{"projected config map", res(nodeA, "get", "", "configmaps", "", "ns", "proj-cm"), auth.DecisionAllow},
		{"claim", res(nodeA, "get", "", "persistentvolumeclaims", "", "ns", "data"), auth.DecisionAllow},
		{"token of the pod's account", res(nodeA, "create", "", "serviceaccounts", "token", "ns", "web-sa"), auth.DecisionAllow},
		{"token of another account", res(nodeA, "create", "", "serviceaccounts", "token", "ns", "default"), auth.DecisionNoOpinion},
		{"get own pod", res(nodeA, "get", "", "pods", "", "ns", "web"), auth.DecisionAllow},
		{"status of own pod", res(nodeA, "patch", "", "pods", "status", "ns", "web"), auth.DecisionAllow},
		{"other node's pod", res(nodeB, "get", "", "pods", "", "ns", "web"), auth.DecisionNoOpinion},
		{"list pods", res(nodeB, "list", "", "pods", "", "", ""), auth.DecisionAllow},
		{"own node", res(nodeA, "patch", "", "nodes", "status", "", "node-a"), auth.DecisionAllow},
		{"other node", res(nodeA, "update", "", "nodes", "", "", "node-b"), auth.DecisionNoOpinion},
		{"register", res(nodeA, "create", "", "nodes", "", "", ""), auth.DecisionAllow},
		{"own lease", res(nodeA, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-a"), auth.DecisionAllow},
		{"other lease", res(nodeA, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-b"), auth.DecisionNoOpinion},
		{"lease elsewhere", res(nodeA, "get", "coordination.k8s.io", "leases", "", "default", "node-a"), auth.DecisionNoOpinion},
		{"events by rule", res(nodeA, "create", "", "events", "", "ns", ""), auth.DecisionAllow},
		{"services by rule", res(nodeA, "watch", "", "services", "", "", ""), auth.DecisionAllow},
		{"deployments: no opinion", res(nodeA, "get", "apps", "deployments", "", "ns", "d"), auth.DecisionNoOpinion},
		{"not a node", res(&auth.DefaultUser{Name: "system:node:node-a"}, "get", "", "secrets", "", "ns", "pull"), auth.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := a.Authorize(ctx, tt.attrs)
			require.NoError(t, err)
			assert.Equal(t, tt.want, d)
		})
	}
	_, reason, _ := a.Authorize(ctx, res(nodeB, "get", "", "secrets", "", "ns", "pull"))
	assert.Equal(t, "no relationship found between node 'node-b' and this object", reason)

	// Rebinding the pod moves the access.
	_, err = st.Delete(ctx, storage.Key(schema.GroupResource{Resource: "pods"}, "ns", "web"), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, _, _ := a.Authorize(ctx, res(nodeA, "get", "", "secrets", "", "ns", "pull"))
		return d == auth.DecisionNoOpinion
	}, 30*time.Second, 10*time.Millisecond)
}
