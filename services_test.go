package podkit

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDNSAddr(t *testing.T) {
	for _, tc := range []struct{ cidr, want string }{
		{"10.96.0.0/12", "10.96.0.10"},
		{"10.130.0.0/16", "10.130.0.10"},
		{"172.20.5.0/24", "172.20.5.10"},
		{"10.96.0.7/12", "10.96.0.10"}, // the range, not the address given
	} {
		assert.Equal(t, tc.want, DNSAddr(netip.MustParsePrefix(tc.cidr)).String(), tc.cidr)
	}
}

func TestDNSService(t *testing.T) {
	s := DNSService(netip.MustParseAddr("10.96.0.10"))
	assert.Equal(t, "kube-system", s.Namespace)
	assert.Equal(t, DNSServiceName, s.Name)
	assert.Nil(t, s.Spec.Selector, "endpoints are published by the nodes")
	assert.Equal(t, []string{"10.96.0.10"}, s.Spec.ClusterIPs)
	assert.Len(t, s.Spec.Ports, 2)
	assert.Equal(t, "Local", string(*s.Spec.InternalTrafficPolicy))
}

func TestRoutePriority(t *testing.T) {
	a, b := routePriority("node-1"), routePriority("node-2")
	assert.Equal(t, a, routePriority("node-1"), "stable per node")
	assert.NotEqual(t, a, b)
	assert.GreaterOrEqual(t, a, 1000)
}
