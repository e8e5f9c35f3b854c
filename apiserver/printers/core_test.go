package printers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSimpleKinds(t *testing.T) {
	m := func(name string) metav1.ObjectMeta { return objMeta(name, 45*time.Second) }
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		cells   []any
	}{
		{"namespace", &corev1.Namespace{ObjectMeta: m("team-a"), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			[]string{"Name", "Status", "Age"}, []any{"team-a", "Terminating", "45s"}},
		{"config map counts data and binary data", &corev1.ConfigMap{ObjectMeta: m("cfg"), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}},
			[]string{"Name", "Data", "Age"}, []any{"cfg", int64(3), "45s"}},
		{"secret", &corev1.Secret{ObjectMeta: m("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			[]string{"Name", "Type", "Data", "Age"}, []any{"tls", "kubernetes.io/tls", int64(2), "45s"}},
		{"service account", &corev1.ServiceAccount{ObjectMeta: m("default"), Secrets: []corev1.ObjectReference{{Name: "old-token"}}},
			[]string{"Name", "Age"}, []any{"default", "45s"}},
		{"lease", &coordinationv1.Lease{ObjectMeta: m("node-1"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1")}},
			[]string{"Name", "Holder", "Age"}, []any{"node-1", "node-1", "45s"}},
		{"lease without holder", &coordinationv1.Lease{ObjectMeta: m("kube-scheduler")},
			[]string{"Name", "Holder", "Age"}, []any{"kube-scheduler", "", "45s"}},
		{"pod template", &corev1.PodTemplate{ObjectMeta: m("tmpl"), Template: template()},
			[]string{"Name", "Containers", "Images", "Pod Labels"}, []any{"tmpl", "app,log", "nginx:1.27,busybox", "app=web"}},
		{"priority class", &schedulingv1.PriorityClass{ObjectMeta: m("system-node-critical"), Value: 2000001000, PreemptionPolicy: ptr(corev1.PreemptLowerPriority)},
			[]string{"Name", "Value", "Global-Default", "Age", "+PreemptionPolicy"}, []any{"system-node-critical", int64(2000001000), false, "45s", "PreemptLowerPriority"}},
		{"pod disruption budget", &policyv1.PodDisruptionBudget{ObjectMeta: m("web"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromString("50%"))}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			[]string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"}, []any{"web", "50%", "N/A", int64(1), "45s"}},
		{"role binding", &rbacv1.RoleBinding{ObjectMeta: m("edit"), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}, Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, Name: "alice"}, {Kind: rbacv1.UserKind, Name: "bob"}, {Kind: rbacv1.GroupKind, Name: "devs"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "deployer"}, {Kind: "Other", Name: "x"},
		}}, []string{"Name", "Role", "Age", "+Users", "+Groups", "+ServiceAccounts"}, []any{"edit", "ClusterRole/edit", "45s", "alice, bob", "devs", "ci/deployer"}},
		{"cluster role binding", &rbacv1.ClusterRoleBinding{ObjectMeta: m("admin"), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}},
			[]string{"Name", "Role", "Age", "+Users", "+Groups", "+ServiceAccounts"}, []any{"admin", "ClusterRole/cluster-admin", "45s", "", "", ""}},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.True(t, p.Handles(tt.obj))
			assert.Equal(t, tt.columns, columnNames(p.ColumnDefinitions(tt.obj)))
			assert.Equal(t, tt.cells, cellsOf(t, p, tt.obj))
		})
	}
}

func TestResourceQuotaCells(t *testing.T) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	rq := &corev1.ResourceQuota{
		ObjectMeta: objMeta("compute", 10*time.Minute),
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.cpu": q("4"), "limits.memory": q("8Gi"), "pods": q("10"), "limits.cpu": q("8"), "requests.memory": q("4Gi")},
			Used: corev1.ResourceList{"requests.cpu": q("500m"), "limits.memory": q("1Gi"), "pods": q("3"), "requests.memory": q("512Mi")},
		},
	}
	p := newTestPrinter(t)
	assert.Equal(t, []any{
		"compute",
		"pods: 3/10, requests.cpu: 500m/4, requests.memory: 512Mi/4Gi",
		"limits.cpu: 0/8, limits.memory: 1Gi/8Gi",
		"10m",
	}, cellsOf(t, p, rq))
	assert.Equal(t, []string{"Name", "Request", "Limit", "Age"}, columnNames(p.ColumnDefinitions(rq)))
	assert.Equal(t, []any{"empty", "", "", "10m"}, cellsOf(t, p, &corev1.ResourceQuota{ObjectMeta: objMeta("empty", 10*time.Minute)}))
}
