package cni_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/cni/netns"
)

func readSysctl(t *testing.T, nsPath, path string) string {
	t.Helper()
	var v string
	require.NoError(t, netns.Do(nsPath, func() error {
		b, err := os.ReadFile(path)
		v = strings.TrimSpace(string(b))
		return err
	}))
	return v
}

func nftTables(t *testing.T, nsPath string) []string {
	t.Helper()
	ns, err := vnetns.GetFromPath(nsPath)
	require.NoError(t, err)
	defer ns.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	require.NoError(t, err)
	tables, err := c.ListTables()
	require.NoError(t, err)
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	return names
}

// TestBridgeMasqueradesEgress builds node ─ external network entirely in
// namespaces: the external namespace has no route to the pod CIDR, so a
// pod reaches it only when the node forwards and masquerades.
func TestBridgeMasqueradesEgress(t *testing.T) {
	env := cnitest.NewEnv(t)
	const fwd = "/proc/sys/net/ipv4/ip_forward"
	// A new namespace inherits its IPv4 settings from the host's initial
	// one (net.core.devconf_inherit_init_net=0 means "inherit" for IPv4),
	// where another node may have turned forwarding on: start from off.
	require.NoError(t, netns.Do(env.NodeNS.Path(), func() error { return os.WriteFile(fwd, []byte("0"), 0o644) }))
	require.Equal(t, "0", readSysctl(t, env.NodeNS.Path(), fwd), "the node namespace starts without forwarding")

	ext := env.NewPodNS(t)
	r := cnitest.RandomByte()
	nodeSide := netip.MustParsePrefix(fmt.Sprintf("10.252.%d.1/30", r))
	extSide := netip.MustParsePrefix(fmt.Sprintf("10.252.%d.2/30", r))
	nh, err := env.NodeNS.Handle()
	require.NoError(t, err)
	defer nh.Close()
	eh, err := ext.Handle()
	require.NoError(t, err)
	defer eh.Close()
	extFd, err := vnetns.GetFromPath(ext.Path())
	require.NoError(t, err)
	defer extFd.Close()
	la := netlink.NewLinkAttrs()
	la.Name = "pkext" + env.Suffix
	require.NoError(t, nh.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "uplink", PeerNamespace: netlink.NsFd(int(extFd))}))
	up := func(h *netlink.Handle, name string, p netip.Prefix) {
		l, err := h.LinkByName(name)
		require.NoError(t, err)
		require.NoError(t, h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(p)}))
		require.NoError(t, h.LinkSetUp(l))
	}
	up(nh, la.Name, nodeSide)
	up(eh, "uplink", extSide)
	lo, err := eh.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, eh.LinkSetUp(lo))

	b := newBridge(t, env, cni.WithIPForward(true), cni.WithMasquerade(true, env.TableName))
	pod := env.NewPodNS(t)
	a := env.Attachment(pod)
	_, err = b.Setup(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, "1", readSysctl(t, env.NodeNS.Path(), fwd))
	assert.Contains(t, nftTables(t, env.NodeNS.Path()), env.TableName)

	srv := cnitest.EchoServer(t, ext.Path(), extSide.Addr())
	seen := cnitest.RequireEcho(t, pod.Path(), srv)
	assert.Equal(t, nodeSide.Addr(), seen.Addr(), "the external side sees the node's address, not the pod's")

	require.NoError(t, b.Teardown(t.Context(), a))
	require.NoError(t, b.Cleanup(t.Context()))
	assert.NotContains(t, nftTables(t, env.NodeNS.Path()), env.TableName, "Cleanup removes the table")
	assert.Equal(t, "0", readSysctl(t, env.NodeNS.Path(), fwd), "Cleanup restores forwarding")
	require.NoError(t, nh.LinkDel(&netlink.Veth{LinkAttrs: la}))
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
