package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Default applies Kubernetes' decode-time defaults to obj in place. Lists of
// a known type have every item defaulted. Objects of other types (and nil)
// are left untouched; Default reports whether it knew the type.
func Default(obj runtime.Object) bool {
	switch o := obj.(type) {
	case nil:
		return false
	// core/v1
	case *corev1.Pod:
		Pod(o)
	case *corev1.PodTemplate:
		PodTemplateSpec(&o.Template)
	case *corev1.ReplicationController:
		ReplicationController(o)
	case *corev1.Service:
		Service(o)
	case *corev1.Namespace:
		Namespace(o)
	case *corev1.Node:
		Node(o)
	case *corev1.Secret:
		Secret(o)
	case *corev1.ConfigMap:
		ConfigMap(o)
	case *corev1.Endpoints:
		Endpoints(o)
	case *corev1.LimitRange:
		LimitRange(o)
	case *corev1.ResourceQuota:
		ResourceQuota(o)
	case *corev1.PersistentVolume:
		PersistentVolume(o)
	case *corev1.PersistentVolumeClaim:
		PersistentVolumeClaim(o)
	// apps/v1
	case *appsv1.Deployment:
		Deployment(o)
	case *appsv1.ReplicaSet:
		ReplicaSet(o)
	case *appsv1.DaemonSet:
		DaemonSet(o)
	case *appsv1.StatefulSet:
		StatefulSet(o)
	// batch/v1
	case *batchv1.Job:
		Job(o)
	case *batchv1.CronJob:
		CronJob(o)
	// others
	case *discoveryv1.EndpointSlice:
		EndpointSlice(o)
	case *schedulingv1.PriorityClass:
		PriorityClass(o)
	case *networkingv1.NetworkPolicy:
		NetworkPolicy(o)
	case *rbacv1.RoleBinding:
		RoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		ClusterRoleBinding(o)
	default:
		return defaultList(obj)
	}
	return true
}

// OnCreate applies Default plus the defaults Kubernetes only applies when an
// object is created (in its REST strategy), which must not come back on
// later updates: a new namespace gets the "kubernetes" finalizer, which the
// namespace controller later removes.
func OnCreate(obj runtime.Object) bool {
	known := Default(obj)
	if ns, ok := obj.(*corev1.Namespace); ok {
		NamespaceOnCreate(ns)
	}
	return known
}

// defaultList defaults every item of a list whose item type Default knows.
func defaultList(obj runtime.Object) bool {
	if !meta.IsListType(obj) {
		return false
	}
	known := false
	// EachListItem hands out pointers into the typed Items slice, so the
	// items are defaulted in place.
	_ = meta.EachListItem(obj, func(item runtime.Object) error {
		if Default(item) {
			known = true
		}
		return nil
	})
	return known
}

// roundUpResources rounds every quantity up to milli precision, as
// Kubernetes does for each ResourceList it decodes (values finer than 1m
// would not survive a round trip).
func roundUpResources(rl corev1.ResourceList) {
	for name, q := range rl {
		q.RoundUp(-3)
		rl[name] = q
	}
}

func ptrTo[T any](v T) *T { return &v }
