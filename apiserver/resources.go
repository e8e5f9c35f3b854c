package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verbs of a resource as discovery lists them.
var (
	verbsAll      = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsStatus   = []string{"get", "patch", "update"}
	verbsCreate   = []string{"create"}
	categoriesAll = []string{"all"}
)

// Resource describes one served REST resource: its names for discovery, its
// Go types, and how the generic handlers treat it.
type Resource struct {
	GroupVersion schema.GroupVersion
	Resource     string // plural, lower case: "pods"
	Singular     string
	Kind         string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	// Verbs of the main resource; nil means every verb.
	Verbs []string
	// New and NewList return empty objects of the resource's Go types.
	New     func() runtime.Object
	NewList func() runtime.Object
	// Subresources served: "status", "scale", "binding", "finalize",
	// "log" (pods).
	Subresources []string
	// GracefulDelete marks resources (pods) whose deletion first sets a
	// deletionTimestamp and waits for the node to confirm.
	GracefulDelete bool
	// FieldLabels lists the field selectors the resource supports beyond
	// metadata.name and metadata.namespace.
	FieldLabels []string
}

// GroupResource returns the resource's group and plural name.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Resource}
}

// GroupVersionKind returns the resource's kind in its group version.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// HasSubresource reports whether sub is served.
func (r *Resource) HasSubresource(sub string) bool {
	for _, s := range r.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}

// AllowsVerb reports whether the main resource serves verb.
func (r *Resource) AllowsVerb(verb string) bool {
	verbs := r.Verbs
	if verbs == nil {
		verbs = verbsAll
	}
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

var (
	gvCore        = corev1.SchemeGroupVersion
	gvApps        = appsv1.SchemeGroupVersion
	gvBatch       = batchv1.SchemeGroupVersion
	gvCoordinate  = coordinationv1.SchemeGroupVersion
	gvDiscovery   = discoveryv1.SchemeGroupVersion
	gvEvents      = eventsv1.SchemeGroupVersion
	gvRBAC        = rbacv1.SchemeGroupVersion
	gvAutoscaling = autoscalingv1.SchemeGroupVersion
)

// DefaultResources returns the resources podkit serves, in discovery order.
func DefaultResources() []*Resource {
	podFields := []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
		"spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"}
	eventFields := []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
		"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}
	return append([]*Resource{
		{GroupVersion: gvCore, Resource: "bindings", Singular: "binding", Kind: "Binding", Namespaced: true,
			Verbs: verbsCreate, New: func() runtime.Object { return &corev1.Binding{} }},
		{GroupVersion: gvCore, Resource: "configmaps", Singular: "configmap", Kind: "ConfigMap", Namespaced: true,
			ShortNames: []string{"cm"},
			New:        func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		{GroupVersion: gvCore, Resource: "endpoints", Singular: "endpoints", Kind: "Endpoints", Namespaced: true,
			ShortNames: []string{"ep"},
			New:        func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} }},
		{GroupVersion: gvCore, Resource: "events", Singular: "event", Kind: "Event", Namespaced: true,
			ShortNames: []string{"ev"}, FieldLabels: eventFields,
			New: func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} }},
		{GroupVersion: gvCore, Resource: "limitranges", Singular: "limitrange", Kind: "LimitRange", Namespaced: true,
			ShortNames: []string{"limits"},
			New:        func() runtime.Object { return &corev1.LimitRange{} }, NewList: func() runtime.Object { return &corev1.LimitRangeList{} }},
		{GroupVersion: gvCore, Resource: "namespaces", Singular: "namespace", Kind: "Namespace",
			ShortNames: []string{"ns"}, Subresources: []string{"status", "finalize"}, FieldLabels: []string{"status.phase"},
			Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			New:   func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} }},
		{GroupVersion: gvCore, Resource: "nodes", Singular: "node", Kind: "Node",
			ShortNames: []string{"no"}, Subresources: []string{"status"}, FieldLabels: []string{"spec.unschedulable"},
			New: func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} }},
		{GroupVersion: gvCore, Resource: "pods", Singular: "pod", Kind: "Pod", Namespaced: true,
			ShortNames: []string{"po"}, Categories: categoriesAll, Subresources: []string{"status", "binding", "log"},
			GracefulDelete: true, FieldLabels: podFields,
			New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} }},
		{GroupVersion: gvCore, Resource: "resourcequotas", Singular: "resourcequota", Kind: "ResourceQuota", Namespaced: true,
			ShortNames: []string{"quota"}, Subresources: []string{"status"},
			New: func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} }},
		{GroupVersion: gvCore, Resource: "secrets", Singular: "secret", Kind: "Secret", Namespaced: true,
			FieldLabels: []string{"type"},
			New:         func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} }},
		{GroupVersion: gvCore, Resource: "serviceaccounts", Singular: "serviceaccount", Kind: "ServiceAccount", Namespaced: true,
			ShortNames: []string{"sa"}, Subresources: []string{"token"},
			New: func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} }},
		{GroupVersion: gvCore, Resource: "services", Singular: "service", Kind: "Service", Namespaced: true,
			ShortNames: []string{"svc"}, Categories: categoriesAll, Subresources: []string{"status"},
			FieldLabels: []string{"spec.clusterIP", "spec.type"},
			New:         func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} }},

		{GroupVersion: gvApps, Resource: "deployments", Singular: "deployment", Kind: "Deployment", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: categoriesAll, Subresources: []string{"status", "scale"},
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} }},
		{GroupVersion: gvApps, Resource: "replicasets", Singular: "replicaset", Kind: "ReplicaSet", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: categoriesAll, Subresources: []string{"status", "scale"},
			FieldLabels: []string{"status.replicas"},
			New:         func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} }},

		{GroupVersion: gvBatch, Resource: "jobs", Singular: "job", Kind: "Job", Namespaced: true,
			Categories: categoriesAll, Subresources: []string{"status"}, FieldLabels: []string{"status.successful"},
			New: func() runtime.Object { return &batchv1.Job{} }, NewList: func() runtime.Object { return &batchv1.JobList{} }},

		{GroupVersion: gvCoordinate, Resource: "leases", Singular: "lease", Kind: "Lease", Namespaced: true,
			New: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} }},

		{GroupVersion: gvDiscovery, Resource: "endpointslices", Singular: "endpointslice", Kind: "EndpointSlice", Namespaced: true,
			New: func() runtime.Object { return &discoveryv1.EndpointSlice{} }, NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},

		{GroupVersion: gvEvents, Resource: "events", Singular: "event", Kind: "Event", Namespaced: true,
			ShortNames: []string{"ev"},
			New:        func() runtime.Object { return &eventsv1.Event{} }, NewList: func() runtime.Object { return &eventsv1.EventList{} }},

		{GroupVersion: gvAuthentication, Resource: "selfsubjectreviews", Singular: "selfsubjectreview", Kind: "SelfSubjectReview",
			Verbs: verbsCreate, New: newSelfSubjectReview},
		{GroupVersion: gvAuthentication, Resource: "tokenreviews", Singular: "tokenreview", Kind: "TokenReview",
			Verbs: verbsCreate, New: newTokenReview},

		{GroupVersion: gvRBAC, Resource: "clusterrolebindings", Singular: "clusterrolebinding", Kind: "ClusterRoleBinding",
			New: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
		{GroupVersion: gvRBAC, Resource: "clusterroles", Singular: "clusterrole", Kind: "ClusterRole",
			New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
		{GroupVersion: gvRBAC, Resource: "rolebindings", Singular: "rolebinding", Kind: "RoleBinding", Namespaced: true,
			New: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} }},
		{GroupVersion: gvRBAC, Resource: "roles", Singular: "role", Kind: "Role", Namespaced: true,
			New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} }},
	}, append(AccessReviewResources(), WebhookConfigurationResources()...)...)
}
