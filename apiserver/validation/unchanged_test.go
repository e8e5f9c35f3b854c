package validation

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// validObjects returns one valid, defaulted object of every kind with
// specific rules.
func validObjects() map[string]runtime.Object {
	ns := metav1.ObjectMeta{Name: "obj", Namespace: "default"}
	cluster := metav1.ObjectMeta{Name: "obj"}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := template(map[string]string{"app": "web"}, corev1.RestartPolicyAlways)
	one := intstr.FromInt32(1)
	micro := metav1.NewMicroTime(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))
	return map[string]runtime.Object{
		"Pod":         validPod(),
		"PodTemplate": &corev1.PodTemplate{ObjectMeta: ns, Template: tmpl},
		"ReplicationController": &corev1.ReplicationController{ObjectMeta: ns, Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr(int32(1)), Selector: map[string]string{"app": "web"}, Template: &tmpl}},
		"Node":           validNode(),
		"Namespace":      &corev1.Namespace{ObjectMeta: cluster, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		"Service":        validService(),
		"Endpoints":      &corev1.Endpoints{ObjectMeta: ns, Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.1.0.1"}}}}},
		"EndpointSlice":  &discoveryv1.EndpointSlice{ObjectMeta: ns, AddressType: discoveryv1.AddressTypeIPv4},
		"ConfigMap":      &corev1.ConfigMap{ObjectMeta: ns, Data: map[string]string{"a": "b"}},
		"Secret":         &corev1.Secret{ObjectMeta: ns, Type: corev1.SecretTypeOpaque},
		"ServiceAccount": &corev1.ServiceAccount{ObjectMeta: ns},
		"Event": &corev1.Event{ObjectMeta: ns, InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web"},
			Reason: "Started", Type: corev1.EventTypeNormal},
		"events.k8s.io/Event": &eventsv1.Event{ObjectMeta: ns, EventTime: micro, ReportingController: "podkit.io/kubelet", ReportingInstance: "n1",
			Action: "Start", Reason: "Started", Type: corev1.EventTypeNormal},
		"LimitRange": &corev1.LimitRange{ObjectMeta: ns, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
		"ResourceQuota": &corev1.ResourceQuota{ObjectMeta: ns, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}}},
		"Deployment":    validDeployment(),
		"ReplicaSet": &appsv1.ReplicaSet{ObjectMeta: ns, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: sel, Template: tmpl},
			Status: appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}},
		"StatefulSet": &appsv1.StatefulSet{ObjectMeta: ns, Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(1)), Selector: sel, Template: tmpl,
			PodManagementPolicy: appsv1.ParallelPodManagement, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		"DaemonSet": &appsv1.DaemonSet{ObjectMeta: ns, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}}}},
		"Job":         validJob(),
		"Lease":       &coordinationv1.Lease{ObjectMeta: ns, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr(int32(15))}},
		"Role":        &rbacv1.Role{ObjectMeta: ns},
		"ClusterRole": &rbacv1.ClusterRole{ObjectMeta: cluster, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		"RoleBinding": &rbacv1.RoleBinding{ObjectMeta: ns, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBinding{ObjectMeta: cluster, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:masters"}}},
		"Scale": &autoscalingv1.Scale{ObjectMeta: ns, Spec: autoscalingv1.ScaleSpec{Replicas: 2}},
	}
}

// TestUnchangedObjectsStayValid: every valid object passes create, and an
// update or status update that changes nothing passes too.
func TestUnchangedObjectsStayValid(t *testing.T) {
	v := Default()
	for name, obj := range validObjects() {
		t.Run(name, func(t *testing.T) {
			expectErrors(t, v.ValidateCreate(obj))
			old := obj.DeepCopyObject()
			m, err := meta.Accessor(old)
			if err != nil {
				t.Fatal(err)
			}
			m.SetResourceVersion("12")
			m.SetUID("uid-1")
			cur := old.DeepCopyObject()
			expectErrors(t, v.ValidateUpdate(cur, old))
			expectErrors(t, v.ValidateStatusUpdate(cur, old))
			if name == "Scale" {
				return // a Scale is validated like a new one; its name comes from the URL
			}
			// Renaming is always rejected.
			renamed := old.DeepCopyObject()
			rm, _ := meta.Accessor(renamed)
			rm.SetName("other")
			expectErrors(t, v.ValidateUpdate(renamed, old), inv("metadata.name", "field is immutable"))
		})
	}
}
