package defaults

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestService(t *testing.T) {
	single := corev1.IPFamilyPolicySingleStack
	tests := []struct {
		name  string
		in    corev1.ServiceSpec
		check func(t *testing.T, s corev1.ServiceSpec)
	}{
		{
			name: "minimal ClusterIP",
			in:   corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.ServiceTypeClusterIP, s.Type)
				assert.Equal(t, corev1.ServiceAffinityNone, s.SessionAffinity)
				assert.Nil(t, s.SessionAffinityConfig)
				assert.Equal(t, corev1.ProtocolTCP, s.Ports[0].Protocol)
				assert.Equal(t, intstr.FromInt32(80), s.Ports[0].TargetPort)
				assert.Equal(t, corev1.ServiceInternalTrafficPolicyCluster, *s.InternalTrafficPolicy)
				assert.Equal(t, corev1.IPFamilyPolicySingleStack, *s.IPFamilyPolicy)
				assert.Empty(t, s.ExternalTrafficPolicy)
				assert.Nil(t, s.AllocateLoadBalancerNodePorts)
				assert.Empty(t, s.IPFamilies, "families are the allocator's")
			},
		},
		{
			name: "named and numeric target ports kept",
			in: corev1.ServiceSpec{Ports: []corev1.ServicePort{
				{Port: 80, TargetPort: intstr.FromString("http")},
				{Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolSCTP},
			}},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, intstr.FromString("http"), s.Ports[0].TargetPort)
				assert.Equal(t, intstr.FromInt32(8443), s.Ports[1].TargetPort)
				assert.Equal(t, corev1.ProtocolSCTP, s.Ports[1].Protocol)
			},
		},
		{
			name: "NodePort gets external traffic policy",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.ServiceExternalTrafficPolicyCluster, s.ExternalTrafficPolicy)
				assert.Nil(t, s.AllocateLoadBalancerNodePorts)
			},
		},
		{
			name: "LoadBalancer allocates node ports",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.ServiceExternalTrafficPolicyCluster, s.ExternalTrafficPolicy)
				require.NotNil(t, s.AllocateLoadBalancerNodePorts)
				assert.True(t, *s.AllocateLoadBalancerNodePorts)
			},
		},
		{
			name: "ClusterIP with external IPs",
			in:   corev1.ServiceSpec{ExternalIPs: []string{"192.0.2.1"}},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.ServiceExternalTrafficPolicyCluster, s.ExternalTrafficPolicy)
			},
		},
		{
			name: "ClientIP affinity gets the 3h timeout",
			in:   corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, int32(10800), *s.SessionAffinityConfig.ClientIP.TimeoutSeconds)
			},
		},
		{
			name: "None affinity drops the config",
			in: corev1.ServiceSpec{SessionAffinityConfig: &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(int32(5))},
			}},
			check: func(t *testing.T, s corev1.ServiceSpec) { assert.Nil(t, s.SessionAffinityConfig) },
		},
		{
			name: "ExternalName has no traffic or family policy",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Nil(t, s.InternalTrafficPolicy)
				assert.Nil(t, s.IPFamilyPolicy)
			},
		},
		{
			name: "headless without selector requires dual stack",
			in:   corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.IPFamilyPolicyRequireDualStack, *s.IPFamilyPolicy)
			},
		},
		{
			name: "headless with selector is single stack",
			in:   corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"a": "b"}},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.IPFamilyPolicySingleStack, *s.IPFamilyPolicy)
			},
		},
		{
			name: "explicit family policy kept",
			in:   corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, IPFamilyPolicy: &single},
			check: func(t *testing.T, s corev1.ServiceSpec) {
				assert.Equal(t, corev1.IPFamilyPolicySingleStack, *s.IPFamilyPolicy)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Service{Spec: tt.in}
			Service(s)
			tt.check(t, s.Spec)
		})
	}
}

func TestServiceLoadBalancerIngressIPMode(t *testing.T) {
	s := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.9"}, {Hostname: "lb.example"}}
	Service(s)
	assert.Equal(t, corev1.LoadBalancerIPModeVIP, *s.Status.LoadBalancer.Ingress[0].IPMode)
	assert.Nil(t, s.Status.LoadBalancer.Ingress[1].IPMode)
}

func TestNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"x": "y"}}}
	Namespace(ns)
	assert.Equal(t, map[string]string{"x": "y", "kubernetes.io/metadata.name": "team-a"}, ns.Labels)
	assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
	assert.Empty(t, ns.Spec.Finalizers, "Default must not add the finalizer (updates may remove it)")

	unnamed := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tmp-"}}
	Namespace(unnamed)
	assert.Nil(t, unnamed.Labels)

	terminating := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	Namespace(terminating)
	assert.Equal(t, corev1.NamespaceTerminating, terminating.Status.Phase)
}

func TestOnCreateNamespaceFinalizer(t *testing.T) {
	tests := []struct {
		name string
		in   []corev1.FinalizerName
		want []corev1.FinalizerName
	}{
		{name: "none", want: []corev1.FinalizerName{"kubernetes"}},
		{name: "other", in: []corev1.FinalizerName{"example.com/x"}, want: []corev1.FinalizerName{"example.com/x", "kubernetes"}},
		{name: "already", in: []corev1.FinalizerName{"kubernetes"}, want: []corev1.FinalizerName{"kubernetes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NamespaceSpec{Finalizers: tt.in}}
			assert.True(t, OnCreate(ns))
			assert.Equal(t, tt.want, ns.Spec.Finalizers)
			assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
		})
	}
}

func TestNode(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Capacity: rl("cpu", "4", "memory", "8Gi", "pods", "110")}}
	Node(n)
	assertResources(t, rl("cpu", "4", "memory", "8Gi", "pods", "110"), n.Status.Allocatable)
	n.Status.Capacity["cpu"] = rl("cpu", "2")["cpu"]
	assert.Equal(t, "4", ptrTo(n.Status.Allocatable["cpu"]).String(), "allocatable must not alias capacity")

	explicit := &corev1.Node{Status: corev1.NodeStatus{Capacity: rl("cpu", "4"), Allocatable: rl("cpu", "3500m")}}
	Node(explicit)
	assertResources(t, rl("cpu", "3500m"), explicit.Status.Allocatable)
}

func TestSecretConfigMapEndpoints(t *testing.T) {
	s := &corev1.Secret{}
	Secret(s)
	assert.Equal(t, corev1.SecretTypeOpaque, s.Type)
	tls := &corev1.Secret{Type: corev1.SecretTypeTLS}
	Secret(tls)
	assert.Equal(t, corev1.SecretTypeTLS, tls.Type)

	cm := &corev1.ConfigMap{}
	ConfigMap(cm)
	assert.NotNil(t, cm.Data)

	ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}, {Port: 53, Protocol: corev1.ProtocolUDP}}}}}
	Endpoints(ep)
	assert.Equal(t, corev1.ProtocolTCP, ep.Subsets[0].Ports[0].Protocol)
	assert.Equal(t, corev1.ProtocolUDP, ep.Subsets[0].Ports[1].Protocol)
}

func TestLimitRange(t *testing.T) {
	tests := []struct {
		name               string
		item               corev1.LimitRangeItem
		wantDefault        corev1.ResourceList
		wantDefaultRequest corev1.ResourceList
	}{
		{
			name:               "max becomes default and default request",
			item:               corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1")},
			wantDefault:        rl("cpu", "1"),
			wantDefaultRequest: rl("cpu", "1"),
		},
		{
			name:               "default limit becomes default request",
			item:               corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("memory", "512Mi")},
			wantDefault:        rl("memory", "512Mi"),
			wantDefaultRequest: rl("memory", "512Mi"),
		},
		{
			name:               "min becomes default request when nothing else",
			item:               corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "100m")},
			wantDefault:        corev1.ResourceList{},
			wantDefaultRequest: rl("cpu", "100m"),
		},
		{
			name: "explicit values win",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
				Max: rl("cpu", "2"), Default: rl("cpu", "1"), DefaultRequest: rl("cpu", "200m"), Min: rl("cpu", "100m")},
			wantDefault:        rl("cpu", "1"),
			wantDefaultRequest: rl("cpu", "200m"),
		},
		{
			name: "pod items are not filled",
			item: corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "2")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{tt.item}}}
			LimitRange(lr)
			got := lr.Spec.Limits[0]
			if tt.wantDefault == nil {
				assert.Nil(t, got.Default)
				assert.Nil(t, got.DefaultRequest)
				return
			}
			assertResources(t, tt.wantDefault, got.Default)
			assertResources(t, tt.wantDefaultRequest, got.DefaultRequest)
		})
	}
}

func TestPersistentVolumes(t *testing.T) {
	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}},
	}}
	PersistentVolume(pv)
	assert.Equal(t, corev1.VolumePending, pv.Status.Phase)
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, pv.Spec.PersistentVolumeReclaimPolicy)
	assert.Equal(t, corev1.PersistentVolumeFilesystem, *pv.Spec.VolumeMode)
	assert.Equal(t, corev1.HostPathUnset, *pv.Spec.HostPath.Type)

	pvc := &corev1.PersistentVolumeClaim{}
	PersistentVolumeClaim(pvc)
	assert.Equal(t, corev1.ClaimPending, pvc.Status.Phase)
	assert.Equal(t, corev1.PersistentVolumeFilesystem, *pvc.Spec.VolumeMode)
}

func TestReplicationController(t *testing.T) {
	rc := &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{
		Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "nginx"}}},
		},
	}}
	ReplicationController(rc)
	assert.Equal(t, map[string]string{"app": "web"}, rc.Spec.Selector)
	assert.Equal(t, map[string]string{"app": "web"}, rc.Labels)
	assert.Equal(t, int32(1), *rc.Spec.Replicas)
	assert.Equal(t, corev1.RestartPolicyAlways, rc.Spec.Template.Spec.RestartPolicy)

	rc.Spec.Template.Labels["tier"] = "front"
	assert.NotContains(t, rc.Spec.Selector, "tier", "selector must not alias template labels")
}
