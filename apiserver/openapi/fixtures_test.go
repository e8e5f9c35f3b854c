package openapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	allVerbs    = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs = []string{"get", "patch", "update"}
	testInfo    = Info{Version: "v1.33.0-podkit"}
)

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// testResources is a server's worth of resources built from real types.
func testResources() []Resource {
	status := Subresource{Name: "status", Verbs: statusVerbs}
	scale := Subresource{Name: "scale", GroupVersionKind: gvk("autoscaling", "v1", "Scale"),
		Object: &autoscalingv1.Scale{}, Verbs: statusVerbs}
	return []Resource{
		{GroupVersionKind: gvk("", "v1", "Pod"), Resource: "pods", Namespaced: true, Verbs: allVerbs,
			Object: &corev1.Pod{}, List: &corev1.PodList{}, DeleteReturnsObject: true,
			Subresources: []Subresource{status, {Name: "binding", GroupVersionKind: gvk("", "v1", "Binding"),
				Object: &corev1.Binding{}, Verbs: []string{"create"}}}},
		{GroupVersionKind: gvk("", "v1", "Binding"), Resource: "bindings", Namespaced: true,
			Verbs: []string{"create"}, Object: &corev1.Binding{}},
		{GroupVersionKind: gvk("", "v1", "Node"), Resource: "nodes", Verbs: allVerbs,
			Object: &corev1.Node{}, List: &corev1.NodeList{}, Subresources: []Subresource{status}},
		{GroupVersionKind: gvk("", "v1", "Namespace"), Resource: "namespaces",
			Verbs:  []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			Object: &corev1.Namespace{}, List: &corev1.NamespaceList{},
			Subresources: []Subresource{status, {Name: "finalize", Verbs: []string{"update"}}}},
		{GroupVersionKind: gvk("", "v1", "ConfigMap"), Resource: "configmaps", Namespaced: true, Verbs: allVerbs,
			Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}},
		{GroupVersionKind: gvk("", "v1", "Service"), Resource: "services", Namespaced: true,
			Verbs:  []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			Object: &corev1.Service{}, List: &corev1.ServiceList{}, Subresources: []Subresource{status}},
		{GroupVersionKind: gvk("apps", "v1", "Deployment"), Resource: "deployments", Namespaced: true, Verbs: allVerbs,
			Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{}, Subresources: []Subresource{status, scale}},
		{GroupVersionKind: gvk("apps", "v1", "ReplicaSet"), Resource: "replicasets", Namespaced: true, Verbs: allVerbs,
			Object: &appsv1.ReplicaSet{}, List: &appsv1.ReplicaSetList{}, Subresources: []Subresource{status, scale}},
		{GroupVersionKind: gvk("coordination.k8s.io", "v1", "Lease"), Resource: "leases", Namespaced: true, Verbs: allVerbs,
			Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}},
		{GroupVersionKind: gvk("batch", "v1", "Job"), Resource: "jobs", Namespaced: true, Verbs: allVerbs,
			Object: &batchv1.Job{}, List: &batchv1.JobList{}, Subresources: []Subresource{status}},
		{GroupVersionKind: gvk("discovery.k8s.io", "v1", "EndpointSlice"), Resource: "endpointslices", Namespaced: true,
			Verbs: allVerbs, Object: &discoveryv1.EndpointSlice{}, List: &discoveryv1.EndpointSliceList{}},
		{GroupVersionKind: gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"), Resource: "clusterroles",
			Verbs: allVerbs, Object: &rbacv1.ClusterRole{}, List: &rbacv1.ClusterRoleList{}},
	}
}

func newTestHandler(t testing.TB, opts ...Option) *Handler {
	t.Helper()
	h, err := NewHandler(testResources(), testInfo, opts...)
	require.NoError(t, err)
	return h
}
