package podkit

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
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

// A node's guard route makes the cluster's pod range unreachable where no
// bridge covers it, so pod addresses never follow the default route; its
// own metric lets nodes sharing a host each keep one.
func TestGuardRoute(t *testing.T) {
	testutil.RequireRoot(t)
	name := fmt.Sprintf("pk-guard-%d", os.Getpid())
	out, err := exec.Command("ip", "netns", "add", name).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	// A default route out of the namespace, which the guard must beat.
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "pkg0", "type", "veth", "peer", "name", "pkg1"},
		{"link", "set", "pkg0", "up"},
		{"addr", "add", "192.0.2.1/24", "dev", "pkg0"},
		{"route", "add", "default", "via", "192.0.2.2"},
	} {
		out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", args, out)
	}
	nsPath := "/run/netns/" + name
	cidr := netip.MustParsePrefix("10.231.0.0/16")

	routeGet := func() string {
		out, _ := exec.Command("ip", "-n", name, "route", "get", "10.231.7.9").CombinedOutput()
		return string(out)
	}
	require.Contains(t, routeGet(), "via 192.0.2.2", "the default route before the guard")
	a, err := addGuardRoute(nsPath, cidr, routePriority("node-a"))
	require.NoError(t, err)
	b, err := addGuardRoute(nsPath, cidr, routePriority("node-b"))
	require.NoError(t, err)
	assert.Contains(t, routeGet(), "No route to host")
	require.NoError(t, a.remove())
	assert.Contains(t, routeGet(), "No route to host", "node-b's guard remains")
	require.NoError(t, a.remove(), "idempotent")
	require.NoError(t, b.remove())
	assert.Contains(t, routeGet(), "via 192.0.2.2", "both guards removed")
}
