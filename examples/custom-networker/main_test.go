package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox/native"
)

func TestMain(m *testing.M) {
	native.Init() // TestRun runs real containers: re-execs land here
	os.Exit(m.Run())
}

// newPTP returns the networker for env's node namespace, which gets a
// global address on lo first, as a host has one on its uplink: the source
// of the node's own traffic to pods (the ptp veths carry no address).
func newPTP(t *testing.T, env *cnitest.Env) *PTP {
	t.Helper()
	h, err := env.NodeNS.Handle()
	require.NoError(t, err)
	lo, err := h.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, h.AddrAdd(lo, &netlink.Addr{IPNet: ipNet(netip.MustParsePrefix("172.31.255.1/32"))}))
	h.Close()
	p, err := NewPTP(PTPConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir, NodeNetNS: env.NodeNS.Path(), Forward: true})
	require.NoError(t, err)
	return p
}

// podView is what a pod's namespace holds on its interface.
func podView(t *testing.T, nsPath, ifName string) (addrs []string, defaultGW string) {
	t.Helper()
	h, err := netns.HandleAt(nsPath)
	require.NoError(t, err)
	defer h.Close()
	l, err := h.LinkByName(ifName)
	require.NoError(t, err)
	as, err := h.AddrList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, a := range as {
		addrs = append(addrs, a.IPNet.String())
	}
	rs, err := h.RouteList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, r := range rs {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			defaultGW = r.Gw.String()
		}
	}
	return addrs, defaultGW
}

// Two pods in a throwaway node namespace: /32 addresses, the link-local
// next hop, per-pod host routes, node↔pod and pod↔pod traffic.
func TestPTPConnectivity(t *testing.T) {
	env := cnitest.NewEnv(t)
	p := newPTP(t, env)
	nsA, nsB := env.NewPodNS(t), env.NewPodNS(t)
	a, b := env.Attachment(nsA), env.Attachment(nsB)
	resA, err := p.Setup(t.Context(), a)
	require.NoError(t, err)
	resB, err := p.Setup(t.Context(), b)
	require.NoError(t, err)
	ipA, ipB := resA.PodIPs()[0], resB.PodIPs()[0]
	require.NotEqual(t, ipA, ipB)
	assert.True(t, env.PodCIDR.Contains(ipA) && env.PodCIDR.Contains(ipB))

	addrs, gw := podView(t, nsA.Path(), a.IfName)
	assert.Equal(t, []string{ipA.String() + "/32"}, addrs, "a /32, no subnet")
	assert.Equal(t, GatewayAddr.String(), gw)

	nh, err := env.NodeNS.Handle()
	require.NoError(t, err)
	routes, err := nh.RouteGet(ipA.AsSlice())
	require.NoError(t, err)
	l, err := nh.LinkByIndex(routes[0].LinkIndex)
	nh.Close()
	require.NoError(t, err)
	assert.Equal(t, HostLinkName(a.ContainerID, a.IfName), l.Attrs().Name, "the node routes the pod's /32 to its veth")
	assert.NotContains(t, env.NodeLinks(t), env.BridgeName, "no bridge")

	srvA := cnitest.EchoServer(t, nsA.Path(), ipA)
	srvB := cnitest.EchoServer(t, nsB.Path(), ipB)
	assert.Equal(t, ipA, cnitest.RequireEcho(t, nsA.Path(), srvB).Addr(), "pod to pod, no NAT")
	assert.Equal(t, ipB, cnitest.RequireEcho(t, nsB.Path(), srvA).Addr())
	cnitest.RequireEcho(t, env.NodeNS.Path(), srvA) // node to pod

	require.NoError(t, p.Check(t.Context(), a))
	require.NoError(t, p.Teardown(t.Context(), a))
	require.NoError(t, p.Teardown(t.Context(), b))
	assert.ErrorIs(t, p.Check(t.Context(), a), cni.ErrNotAttached)
	for _, name := range env.NodeLinks(t) {
		assert.False(t, strings.HasPrefix(name, HostLinkPrefix), "host veth %s left", name)
	}
}

// The contract's rules every Networker keeps: retries converge to the
// same address, Teardown is idempotent and works without the namespace.
func TestPTPContract(t *testing.T) {
	env := cnitest.NewEnv(t)
	p := newPTP(t, env)
	ns := env.NewPodNS(t)
	a := env.Attachment(ns)
	r1, err := p.Setup(t.Context(), a)
	require.NoError(t, err)
	r2, err := p.Setup(t.Context(), a)
	require.NoError(t, err, "a retried Setup converges")
	assert.Equal(t, r1.PodIPs(), r2.PodIPs())
	addrs, _ := podView(t, ns.Path(), a.IfName)
	assert.Len(t, addrs, 1)

	require.NoError(t, ns.Remove())
	require.NoError(t, p.Teardown(t.Context(), a), "teardown after the namespace is gone")
	require.NoError(t, p.Teardown(t.Context(), a), "and again")
	require.NoError(t, p.Teardown(t.Context(), env.Attachment(nil)), "teardown of something never set up")
	_, err = p.Setup(t.Context(), &cni.Attachment{ContainerID: "x"})
	assert.ErrorIs(t, err, cni.ErrInvalidAttachment)
	assert.Eventually(t, func() bool {
		for _, name := range env.NodeLinks(t) {
			if strings.HasPrefix(name, HostLinkPrefix) {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "host veths removed")
	_, err = NewPTP(PTPConfig{PodCIDR: netip.MustParsePrefix("fd00::/64"), StateDir: t.TempDir()})
	assert.Error(t, err, "IPv4 only")
}

// TestRun runs the example: a real pod on a real node gets its address
// and route from PTP and serves on it; the host is clean afterwards.
func TestRun(t *testing.T) {
	testutil.RequireRoot(t)
	web := filepath.Join(t.TempDir(), "demo-web")
	build := exec.Command("go", "build", "-o", web, "github.com/podkit/podkit/examples/demo-web")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	prefix := "ptp-" + cnitest.RandomHex(3)
	cidr := netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 180+int(cnitest.RandomByte())%20))
	var stdout strings.Builder
	err = run(t.Context(), options{DataDir: t.TempDir(), WebBinary: web, NodePrefix: prefix, ClusterCIDR: cidr,
		Out: &stdout, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err, "output so far:\n%s", stdout.String())
	got := stdout.String()
	assert.Regexp(t, `pod web has IP 10\.\d+\.0\.\d+ \(node PodCIDR 10\.\d+\.0\.0/24\); the host routes it via ptp[0-9a-f]{12}\n`, got)
	assert.Contains(t, got, "the pod answers: hello from web")
	links, err := netlink.LinkList()
	require.NoError(t, err)
	for _, l := range links {
		assert.False(t, strings.HasPrefix(l.Attrs().Name, HostLinkPrefix) && l.Attrs().MasterIndex == 0 && l.Type() == "veth" &&
			strings.Contains(got, l.Attrs().Name), "host veth %s left", l.Attrs().Name)
	}
	_, err = os.Stat("/sys/fs/cgroup/memory/" + podkit.HostName("podkit-", prefix+"-1"))
	assert.True(t, os.IsNotExist(err), "the node's cgroup tree is gone")
}
