package servicealloc

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// seeded makes a test's random picks reproducible.
func seeded() Option { return WithRandSource(rand.NewPCG(1, 2)) }

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func newAllocator(t *testing.T, cidr string, ports utilnet.PortRange, list ListFunc) *Allocator {
	t.Helper()
	a, err := New(Config{ClusterIPRange: mustPrefix(cidr), NodePortRange: ports, List: list}, seeded())
	require.NoError(t, err)
	if list == nil {
		require.NoError(t, a.Sync(context.Background()))
	}
	return a
}

// svc builds a Service as it leaves defaulting and validation.
func svc(name string, typ corev1.ServiceType, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if typ == corev1.ServiceTypeExternalName {
		s.Spec.ExternalName = "example.com"
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func withClusterIP(ip string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip} }
}

func withNodePorts(ports ...int32) func(*corev1.Service) {
	return func(s *corev1.Service) {
		for i, p := range ports {
			s.Spec.Ports[i].NodePort = p
		}
	}
}

func ptr[T any](v T) *T { return &v }
