package validation

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindEntry describes one built-in kind: its Go type, group and scope.
type kindEntry struct {
	obj        runtime.Object
	gk         schema.GroupKind
	namespaced bool
}

func gk(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }

// builtinKinds lists the k8s.io/api kinds podkit serves (and a few more whose
// scope Event.involvedObject checks may need). Kinds with the same name in
// two groups (Event) are distinct Go types.
func builtinKinds() []kindEntry {
	return []kindEntry{
		{&corev1.Pod{}, gk("", "Pod"), true},
		{&corev1.Binding{}, gk("", "Binding"), true},
		{&corev1.PodTemplate{}, gk("", "PodTemplate"), true},
		{&corev1.ReplicationController{}, gk("", "ReplicationController"), true},
		{&corev1.Service{}, gk("", "Service"), true},
		{&corev1.Endpoints{}, gk("", "Endpoints"), true},
		{&corev1.ConfigMap{}, gk("", "ConfigMap"), true},
		{&corev1.Secret{}, gk("", "Secret"), true},
		{&corev1.ServiceAccount{}, gk("", "ServiceAccount"), true},
		{&corev1.Event{}, gk("", "Event"), true},
		{&corev1.LimitRange{}, gk("", "LimitRange"), true},
		{&corev1.ResourceQuota{}, gk("", "ResourceQuota"), true},
		{&corev1.PersistentVolumeClaim{}, gk("", "PersistentVolumeClaim"), true},
		{&corev1.Node{}, gk("", "Node"), false},
		{&corev1.Namespace{}, gk("", "Namespace"), false},
		{&corev1.PersistentVolume{}, gk("", "PersistentVolume"), false},
		{&corev1.ComponentStatus{}, gk("", "ComponentStatus"), false},
		{&appsv1.Deployment{}, gk("apps", "Deployment"), true},
		{&appsv1.ReplicaSet{}, gk("apps", "ReplicaSet"), true},
		{&appsv1.StatefulSet{}, gk("apps", "StatefulSet"), true},
		{&appsv1.DaemonSet{}, gk("apps", "DaemonSet"), true},
		{&appsv1.ControllerRevision{}, gk("apps", "ControllerRevision"), true},
		{&batchv1.Job{}, gk("batch", "Job"), true},
		{&batchv1.CronJob{}, gk("batch", "CronJob"), true},
		{&autoscalingv1.Scale{}, gk("autoscaling", "Scale"), true},
		{&autoscalingv1.HorizontalPodAutoscaler{}, gk("autoscaling", "HorizontalPodAutoscaler"), true},
		{&coordinationv1.Lease{}, gk("coordination.k8s.io", "Lease"), true},
		{&discoveryv1.EndpointSlice{}, gk("discovery.k8s.io", "EndpointSlice"), true},
		{&eventsv1.Event{}, gk("events.k8s.io", "Event"), true},
		{&networkingv1.Ingress{}, gk("networking.k8s.io", "Ingress"), true},
		{&networkingv1.NetworkPolicy{}, gk("networking.k8s.io", "NetworkPolicy"), true},
		{&networkingv1.IngressClass{}, gk("networking.k8s.io", "IngressClass"), false},
		{&policyv1.PodDisruptionBudget{}, gk("policy", "PodDisruptionBudget"), true},
		{&rbacv1.Role{}, gk("rbac.authorization.k8s.io", "Role"), true},
		{&rbacv1.RoleBinding{}, gk("rbac.authorization.k8s.io", "RoleBinding"), true},
		{&rbacv1.ClusterRole{}, gk("rbac.authorization.k8s.io", "ClusterRole"), false},
		{&rbacv1.ClusterRoleBinding{}, gk("rbac.authorization.k8s.io", "ClusterRoleBinding"), false},
		{&schedulingv1.PriorityClass{}, gk("scheduling.k8s.io", "PriorityClass"), false},
		{&storagev1.StorageClass{}, gk("storage.k8s.io", "StorageClass"), false},
		{&storagev1.CSIDriver{}, gk("storage.k8s.io", "CSIDriver"), false},
		{&storagev1.CSINode{}, gk("storage.k8s.io", "CSINode"), false},
		{&storagev1.VolumeAttachment{}, gk("storage.k8s.io", "VolumeAttachment"), false},
	}
}

// kindTable indexes builtinKinds by Go type and by GroupKind.
type kindTable struct {
	byType map[reflect.Type]kindEntry
	byGK   map[schema.GroupKind]bool
}

func newKindTable() kindTable {
	t := kindTable{byType: map[reflect.Type]kindEntry{}, byGK: map[schema.GroupKind]bool{}}
	for _, e := range builtinKinds() {
		t.byType[reflect.TypeOf(e.obj)] = e
		t.byGK[e.gk] = e.namespaced
	}
	return t
}
