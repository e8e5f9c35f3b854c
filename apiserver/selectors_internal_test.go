package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestSelectableFields: every field selector Kubernetes supports on these
// kinds reads the object's value, absent fields read as "" (so a != term
// matches them, as with Kubernetes' field sets), and a namespace is only
// present when set.
func TestSelectableFields(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler",
			ServiceAccountName: "sa", HostNetwork: true},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", NominatedNodeName: "n2",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}},
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u", APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec.containers{c}"},
		Reason:         "Started", ReportingController: "kubelet", Source: corev1.EventSource{Component: "kubelet"}, Type: "Normal"}
	two := int32(2)
	tests := []struct {
		obj  runtime.Object
		want map[string]string // every selectable field and its value
	}{
		{pod, map[string]string{"metadata.name": "p", "metadata.namespace": "ns", "spec.nodeName": "n1", "spec.restartPolicy": "Always",
			"spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "sa", "spec.hostNetwork": "true", "status.phase": "Running",
			"status.podIP": "10.0.0.1", "status.nominatedNodeName": "n2", "status.podIPs": "10.0.0.1,fd00::1"}},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, map[string]string{"metadata.name": "bare", "spec.nodeName": "", "spec.restartPolicy": "",
			"spec.schedulerName": "", "spec.serviceAccountName": "", "spec.hostNetwork": "false", "status.phase": "", "status.podIP": "",
			"status.nominatedNodeName": "", "status.podIPs": ""}},
		{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}}, map[string]string{"metadata.name": "n", "spec.unschedulable": "true"}},
		{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, map[string]string{"metadata.name": "x", "status.phase": "Terminating"}},
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Type: corev1.SecretTypeOpaque}, map[string]string{"metadata.name": "s", "metadata.namespace": "ns", "type": "Opaque"}},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Type: corev1.ServiceTypeClusterIP}},
			map[string]string{"metadata.name": "svc", "metadata.namespace": "ns", "spec.clusterIP": "10.96.0.1", "spec.type": "ClusterIP"}},
		{ev, map[string]string{"metadata.name": "e", "metadata.namespace": "ns", "involvedObject.kind": "Pod", "involvedObject.namespace": "ns",
			"involvedObject.name": "p", "involvedObject.uid": "u", "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "7",
			"involvedObject.fieldPath": "spec.containers{c}", "reason": "Started", "reportingComponent": "kubelet", "source": "kubelet", "type": "Normal"}},
		{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns"}, Status: appsv1.ReplicaSetStatus{Replicas: two}},
			map[string]string{"metadata.name": "rs", "metadata.namespace": "ns", "status.replicas": "2"}},
		{&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}, Status: batchv1.JobStatus{Succeeded: 3}},
			map[string]string{"metadata.name": "j", "metadata.namespace": "ns", "status.successful": "3"}},
		{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}, map[string]string{"metadata.name": "cm", "metadata.namespace": "ns"}},
	}
	candidates := []string{"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
		"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName", "status.podIPs",
		"spec.unschedulable", "type", "spec.clusterIP", "spec.type", "involvedObject.kind", "involvedObject.namespace",
		"involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "status.replicas", "status.successful", "no.such.field"}
	for _, tc := range tests {
		f := selectableFields(tc.obj)
		for _, field := range candidates {
			want, has := tc.want[field]
			assert.Equal(t, has, f.Has(field), "%T %s: Has", tc.obj, field)
			assert.Equal(t, want, f.Get(field), "%T %s: Get", tc.obj, field)
			// The selector sees what a fields.Set of the same values would.
			set := fields.Set(tc.want)
			for _, s := range []fields.Selector{fields.OneTermEqualSelector(field, want), fields.OneTermNotEqualSelector(field, want),
				fields.OneTermEqualSelector(field, "other"), fields.AndSelectors(fields.OneTermEqualSelector(field, want), fields.OneTermNotEqualSelector("metadata.name", "zz"))} {
				assert.Equal(t, s.Matches(set), s.Matches(f), "%T %s", tc.obj, s)
			}
		}
	}
}
