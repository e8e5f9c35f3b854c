package defaults

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestDefaultDispatch(t *testing.T) {
	tests := []struct {
		obj   runtime.Object
		known bool
		check func(t *testing.T, obj runtime.Object)
	}{
		{obj: &corev1.Pod{}, known: true, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, corev1.RestartPolicyAlways, o.(*corev1.Pod).Spec.RestartPolicy)
		}},
		{obj: &corev1.PodTemplate{}, known: true, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, corev1.DNSClusterFirst, o.(*corev1.PodTemplate).Template.Spec.DNSPolicy)
		}},
		{obj: &corev1.Secret{}, known: true, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, corev1.SecretTypeOpaque, o.(*corev1.Secret).Type)
		}},
		{obj: &corev1.PodList{Items: []corev1.Pod{{}, {}}}, known: true, check: func(t *testing.T, o runtime.Object) {
			for _, p := range o.(*corev1.PodList).Items {
				assert.Equal(t, corev1.RestartPolicyAlways, p.Spec.RestartPolicy)
			}
		}},
		{obj: &corev1.ServiceList{Items: []corev1.Service{{}}}, known: true, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, corev1.ServiceTypeClusterIP, o.(*corev1.ServiceList).Items[0].Spec.Type)
		}},
		{obj: &coordinationv1.Lease{}, known: false, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, &coordinationv1.Lease{}, o)
		}},
		{obj: &corev1.Event{}, known: false, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, &corev1.Event{}, o)
		}},
		{obj: &metav1.Status{}, known: false, check: func(t *testing.T, o runtime.Object) {
			assert.Equal(t, &metav1.Status{}, o)
		}},
		{obj: &coordinationv1.LeaseList{Items: []coordinationv1.Lease{{}}}, known: false, check: func(*testing.T, runtime.Object) {}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T", tt.obj), func(t *testing.T) {
			assert.Equal(t, tt.known, Default(tt.obj))
			tt.check(t, tt.obj)
		})
	}
	assert.False(t, Default(nil))
}

func TestDefaultIsIdempotent(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "a", Image: "nginx", Resources: corev1.ResourceRequirements{Limits: rl("cpu", "1")},
	}}}}
	Default(p)
	once := p.DeepCopy()
	Default(p)
	assert.Equal(t, once, p)
}

func TestEndpointSlice(t *testing.T) {
	udp := corev1.ProtocolUDP
	es := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptrTo(int32(80))}, {Name: ptrTo("dns"), Protocol: &udp}}}
	assert.True(t, Default(es))
	assert.Equal(t, "", *es.Ports[0].Name)
	assert.Equal(t, corev1.ProtocolTCP, *es.Ports[0].Protocol)
	assert.Equal(t, "dns", *es.Ports[1].Name)
	assert.Equal(t, corev1.ProtocolUDP, *es.Ports[1].Protocol)
}

func TestPriorityClassNetworkPolicyRBAC(t *testing.T) {
	pc := &schedulingv1.PriorityClass{Value: 10}
	Default(pc)
	assert.Equal(t, corev1.PreemptLowerPriority, *pc.PreemptionPolicy)

	np := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}},
		Egress:  []networkingv1.NetworkPolicyEgressRule{{}},
	}}
	Default(np)
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes)
	assert.Equal(t, corev1.ProtocolTCP, *np.Spec.Ingress[0].Ports[0].Protocol)

	rb := &rbacv1.RoleBinding{
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, Name: "alice"},
			{Kind: rbacv1.GroupKind, Name: "devs"},
			{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "ns"},
		},
	}
	Default(rb)
	assert.Equal(t, rbacv1.GroupName, rb.RoleRef.APIGroup)
	assert.Equal(t, rbacv1.GroupName, rb.Subjects[0].APIGroup)
	assert.Equal(t, rbacv1.GroupName, rb.Subjects[1].APIGroup)
	assert.Equal(t, "", rb.Subjects[2].APIGroup)
}
