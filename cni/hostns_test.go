package cni_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
)

// freeHostCIDR picks a 10.251.x.0/24 that no host route covers yet.
func freeHostCIDR(t *testing.T) netip.Prefix {
	t.Helper()
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(t, err)
	for range 64 {
		p := netip.MustParsePrefix(fmt.Sprintf("10.251.%d.0/24", cnitest.RandomByte()))
		taken := false
		for _, r := range routes {
			if r.Dst == nil {
				continue // the default route
			}
			if d, ok := netip.AddrFromSlice(r.Dst.IP); ok {
				ones, _ := r.Dst.Mask.Size()
				if ones > 0 && netip.PrefixFrom(d.Unmap(), ones).Overlaps(p) {
					taken = true
				}
			}
		}
		if !taken {
			return p
		}
	}
	t.Fatal("no free 10.251.x.0/24")
	return netip.Prefix{}
}

// TestBridgeInHostNamespace runs the bridge where it runs in production:
// in the host's own network namespace. It routes its private test CIDR on
// its own bridge before anything is sent, proves that, never enables
// forwarding and leaves no link behind.
func TestBridgeInHostNamespace(t *testing.T) {
	env := cnitest.NewEnv(t) // pod namespaces and a run dir; the node namespace stays unused
	cidr := freeHostCIDR(t)
	bridge := hostBridgePrefix + env.Suffix
	const fwd = "/proc/sys/net/ipv4/ip_forward"
	fwdBefore, err := os.ReadFile(fwd)
	require.NoError(t, err)

	b, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: cidr, StateDir: env.StateDir}, cni.WithBridgeName(bridge))
	require.NoError(t, err)
	var names []string
	t.Cleanup(func() {
		assert.NoError(t, b.Cleanup(context.Background()))
		assert.NoError(t, b.Close())
		links, err := netlink.LinkList()
		require.NoError(t, err)
		for _, l := range links {
			for _, n := range append(names, bridge) {
				assert.NotEqual(t, n, l.Attrs().Name, "leak: %s still in the host namespace", n)
			}
		}
		fwdAfter, err := os.ReadFile(fwd)
		require.NoError(t, err)
		assert.Equal(t, string(fwdBefore), string(fwdAfter), "ip_forward untouched")
	})

	nsA, nsB := env.NewPodNS(t), env.NewPodNS(t)
	a, bb := env.Attachment(nsA), env.Attachment(nsB)
	names = append(names, cni.HostVethName(a.ContainerID, a.IfName), cni.HostVethName(bb.ContainerID, bb.IfName))
	resA, err := b.Setup(t.Context(), a)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Teardown(context.Background(), a)) })
	resB, err := b.Setup(t.Context(), bb)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Teardown(context.Background(), bb)) })
	ipA := resA.PodIPs()[0]

	// The CIDR is routed on the test bridge, not via eth0 or the default route.
	br, err := netlink.LinkByName(bridge)
	require.NoError(t, err)
	routes, err := netlink.RouteGet(net.IP(ipA.AsSlice()))
	require.NoError(t, err)
	require.Len(t, routes, 1)
	require.Equal(t, br.Attrs().Index, routes[0].LinkIndex, "%s must route via %s", ipA, bridge)
	require.Nil(t, routes[0].Gw, "directly connected, no gateway")
	if eth0, err := netlink.LinkByName("eth0"); err == nil {
		require.NotEqual(t, eth0.Attrs().Index, routes[0].LinkIndex)
	}
	src, _ := netip.AddrFromSlice(routes[0].Src)
	require.Equal(t, b.Gateway(), src.Unmap(), "source is the bridge's gateway address")

	srvA := cnitest.EchoServer(t, nsA.Path(), ipA)
	assert.Equal(t, resB.PodIPs()[0], cnitest.RequireEcho(t, nsB.Path(), srvA).Addr())
	srvGW := cnitest.EchoServer(t, "", b.Gateway())
	assert.Equal(t, ipA, cnitest.RequireEcho(t, nsA.Path(), srvGW).Addr(), "pod reaches the gateway on the host")
}
