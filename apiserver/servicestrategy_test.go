package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPrepareServiceUpdate(t *testing.T) {
	single := corev1.IPFamilyPolicySingleStack
	v4 := []corev1.IPFamily{corev1.IPv4Protocol}
	clusterIP := func() *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"},
			IPFamilies: v4, IPFamilyPolicy: &single,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		}}
	}
	nodePort := func() *corev1.Service {
		s := clusterIP()
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}, {Name: "https", Port: 443, NodePort: 30443}}
		return s
	}
	for _, tc := range []struct {
		name   string
		old    *corev1.Service
		update func(s *corev1.Service)
		want   func(s *corev1.Service)
	}{
		{
			name:   "omitted cluster IPs and families are kept",
			old:    clusterIP(),
			update: func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies = "", nil, nil },
			want:   func(s *corev1.Service) {},
		},
		{
			name:   "only the singular field sent (old client)",
			old:    clusterIP(),
			update: func(s *corev1.Service) { s.Spec.ClusterIPs = nil },
			want:   func(s *corev1.Service) {},
		},
		{
			name:   "a changed singular field follows into the plural one (validation rejects it)",
			old:    clusterIP(),
			update: func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.6" },
			want:   func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.6", []string{"10.96.0.6"} },
		},
		{
			name: "to ExternalName: cluster IPs, families and policy dropped",
			old:  clusterIP(),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
			},
			want: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = "", nil, nil, nil
			},
		},
		{
			name: "to ExternalName with a changed cluster IP: left for validation",
			old:  clusterIP(),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.9", []string{"10.96.0.9"}
			},
			want: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = "10.96.0.9", []string{"10.96.0.9"}, nil, nil
			},
		},
		{
			name:   "omitted node ports are kept by port name",
			old:    nodePort(),
			update: func(s *corev1.Service) { s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 0 },
			want:   func(s *corev1.Service) {},
		},
		{
			name: "an old node port now used by another port is not patched back",
			old:  nodePort(),
			update: func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 30443, 0
			},
			want: func(s *corev1.Service) { s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 30443, 0 },
		},
		{
			name:   "to ClusterIP: node ports and external traffic policy dropped",
			old:    nodePort(),
			update: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
			want: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalTrafficPolicy = corev1.ServiceTypeClusterIP, ""
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 0
			},
		},
		{
			name: "to ClusterIP with a new node port: left for validation",
			old:  nodePort(),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 30999
			},
			want: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalTrafficPolicy, s.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, "", 30999
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.old.DeepCopy()
			tc.update(got)
			prepareServiceUpdate(got, tc.old)
			want := tc.old.DeepCopy()
			tc.want(want)
			assert.Equal(t, want.Spec, got.Spec)
		})
	}
}
