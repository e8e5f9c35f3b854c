package cni_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/cni/netns"
)

// newBridge builds a Bridge inside env's node namespace and removes its
// node-level state at cleanup.
func newBridge(t *testing.T, env *cnitest.Env, opts ...cni.BridgeOption) *cni.Bridge {
	t.Helper()
	all := append([]cni.BridgeOption{
		cni.WithNodeNetNS(env.NodeNS.Path()),
		cni.WithBridgeName(env.BridgeName),
	}, opts...)
	b, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir}, all...)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, b.Cleanup(context.Background()))
		assert.NoError(t, b.Close())
		assert.NotContains(t, env.NodeLinks(t), env.BridgeName, "Cleanup removes the bridge")
	})
	return b
}

func TestBridgeConformance(t *testing.T) {
	cnitest.Run(t, func(t *testing.T, env *cnitest.Env) cni.Networker {
		return newBridge(t, env)
	}, cnitest.Options{})
}

// ipamFiles lists the address files of the bridge's IPAM directory.
func ipamFiles(t *testing.T, env *cnitest.Env) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(env.StateDir, "networks", cni.DefaultNetworkName))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func bridgeAddrs(t *testing.T, env *cnitest.Env) []string {
	t.Helper()
	h, err := env.NodeNS.Handle()
	require.NoError(t, err)
	defer h.Close()
	br, err := h.LinkByName(env.BridgeName)
	require.NoError(t, err)
	addrs, err := h.AddrList(br, netlink.FAMILY_V4)
	require.NoError(t, err)
	var out []string
	for _, a := range addrs {
		out = append(out, a.IPNet.String())
	}
	return out
}

func TestBridgeThousandCyclesLeaveNothing(t *testing.T) {
	cycles := 1000
	if testing.Short() {
		cycles = 100
	}
	env := cnitest.NewEnv(t)
	b := newBridge(t, env)
	ctx := t.Context()
	for i := range cycles {
		ns, err := netns.New(env.RunDir, fmt.Sprintf("c%d", i))
		require.NoError(t, err)
		a := env.Attachment(ns)
		_, err = b.Setup(ctx, a)
		if err == nil {
			err = b.Teardown(ctx, a)
		}
		require.NoError(t, errors.Join(err, ns.Remove()), "cycle %d", i)
	}
	assert.ElementsMatch(t, []string{"lo", env.BridgeName}, env.NodeLinks(t), "no veth left")
	assert.Equal(t, []string{netip.PrefixFrom(b.Gateway(), 24).String()}, bridgeAddrs(t, env), "bridge holds only the gateway")
	assert.Empty(t, ipamFiles(t, env), "no allocation left")
	entries, err := os.ReadDir(env.RunDir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the node namespace remains in the run dir")
}

func TestBridgeTeardownReleasesAddressForReuse(t *testing.T) {
	env := cnitest.NewEnv(t)
	// A /29 leaves five pod addresses, so reuse shows up quickly.
	env.PodCIDR = netip.PrefixFrom(env.PodCIDR.Addr(), 29)
	b := newBridge(t, env)
	ctx := t.Context()
	var atts []*cni.Attachment
	for range 5 {
		a := env.Attachment(env.NewPodNS(t))
		_, err := b.Setup(ctx, a)
		require.NoError(t, err)
		atts = append(atts, a)
	}
	extra := env.Attachment(env.NewPodNS(t))
	before := env.NodeLinks(t)
	_, err := b.Setup(ctx, extra)
	require.Error(t, err)
	assert.ErrorIs(t, err, cni.ErrRangeExhausted)
	first, last := b.IPAM().Range()
	assert.Contains(t, err.Error(), fmt.Sprintf("%s-%s of %s", first, last, env.PodCIDR))
	assert.ElementsMatch(t, before, env.NodeLinks(t), "a failed Setup leaves no link")

	freed, ok, err := b.IPAM().Lookup(ctx, atts[3].ContainerID, atts[3].IfName)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, b.Teardown(ctx, atts[3]))
	assert.NotContains(t, env.NodeLinks(t), cni.HostVethName(atts[3].ContainerID, atts[3].IfName))
	res, err := b.Setup(ctx, extra)
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{freed}, res.PodIPs(), "the released address is reused")
}

func TestBridgeRetryKeepsAddress(t *testing.T) {
	env := cnitest.NewEnv(t)
	b := newBridge(t, env)
	a := env.Attachment(env.NewPodNS(t))
	r1, err := b.Setup(t.Context(), a)
	require.NoError(t, err)
	r2, err := b.Setup(t.Context(), a)
	require.NoError(t, err)
	assert.Equal(t, r1.PodIPs(), r2.PodIPs())
	require.NoError(t, b.Check(t.Context(), a))
	require.NoError(t, b.Teardown(t.Context(), a))
}

func TestBridgeSurvivesRestartMidway(t *testing.T) {
	env := cnitest.NewEnv(t)
	ctx := t.Context()
	mk := func() *cni.Bridge {
		b, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir},
			cni.WithNodeNetNS(env.NodeNS.Path()), cni.WithBridgeName(env.BridgeName))
		require.NoError(t, err)
		return b
	}
	first := mk()
	var atts []*cni.Attachment
	held := map[netip.Addr]bool{}
	for range 3 {
		a := env.Attachment(env.NewPodNS(t))
		res, err := first.Setup(ctx, a)
		require.NoError(t, err)
		held[res.PodIPs()[0]] = true
		atts = append(atts, a)
	}
	require.NoError(t, first.Close()) // the process "restarts"; kernel and disk state stay

	second := newBridge(t, env)
	for _, a := range atts {
		require.NoError(t, second.Check(ctx, a), "attachments made before the restart are intact")
	}
	for range 3 {
		a := env.Attachment(env.NewPodNS(t))
		res, err := second.Setup(ctx, a)
		require.NoError(t, err)
		ip := res.PodIPs()[0]
		assert.False(t, held[ip], "%s handed out twice across the restart", ip)
		held[ip] = true
		atts = append(atts, a)
	}
	for _, a := range atts {
		require.NoError(t, second.Teardown(ctx, a))
	}
	assert.Empty(t, ipamFiles(t, env))
	assert.ElementsMatch(t, []string{"lo", env.BridgeName}, env.NodeLinks(t))
}

func TestBridgeMTUAndHairpin(t *testing.T) {
	env := cnitest.NewEnv(t)
	b := newBridge(t, env, cni.WithMTU(1400))
	ns := env.NewPodNS(t)
	a := env.Attachment(ns)
	res, err := b.Setup(t.Context(), a)
	require.NoError(t, err)
	require.Len(t, res.Interfaces, 2)
	assert.Equal(t, ns.Path(), res.Interfaces[1].Sandbox)

	ph, err := ns.Handle()
	require.NoError(t, err)
	defer ph.Close()
	eth, err := ph.LinkByName("eth0")
	require.NoError(t, err)
	assert.Equal(t, 1400, eth.Attrs().MTU)
	assert.Equal(t, res.Interfaces[1].MAC.String(), eth.Attrs().HardwareAddr.String())

	nh, err := env.NodeNS.Handle()
	require.NoError(t, err)
	defer nh.Close()
	hv, err := nh.LinkByName(res.Interfaces[0].Name)
	require.NoError(t, err)
	assert.Equal(t, 1400, hv.Attrs().MTU)
	pi, err := nh.LinkGetProtinfo(hv)
	require.NoError(t, err)
	assert.True(t, pi.Hairpin, "hairpin on by default")
	require.NoError(t, b.Teardown(t.Context(), a))
}

func TestBridgeRefusesForeignInterface(t *testing.T) {
	env := cnitest.NewEnv(t)
	b := newBridge(t, env)
	ns := env.NewPodNS(t)
	h, err := ns.Handle()
	require.NoError(t, err)
	defer h.Close()
	la := netlink.NewLinkAttrs()
	la.Name = "eth0"
	require.NoError(t, h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "other"}))
	a := env.Attachment(ns)
	_, err = b.Setup(t.Context(), a)
	assert.ErrorIs(t, err, cni.ErrExists)
	assert.Empty(t, ipamFiles(t, env), "the address is released on failure")
	assert.ElementsMatch(t, []string{"lo", env.BridgeName}, env.NodeLinks(t))
}

func TestBridgeOptionsRejectBadValues(t *testing.T) {
	cfg := cni.BridgeConfig{PodCIDR: netip.MustParsePrefix("10.251.0.0/24"), StateDir: t.TempDir()}
	for name, opt := range map[string]cni.BridgeOption{
		"long bridge name": cni.WithBridgeName(strings.Repeat("b", 16)),
		"empty bridge":     cni.WithBridgeName(""),
		"tiny MTU":         cni.WithMTU(20),
		"network slash":    cni.WithNetworkName("a/b"),
		"nil logger":       cni.WithLogger(nil),
		"not a netns":      cni.WithNodeNetNS(t.TempDir()),
		"bad table":        cni.WithMasquerade(true, "a b"),
	} {
		_, err := cni.NewBridge(cfg, opt)
		assert.Error(t, err, name)
	}
	_, err := cni.NewBridge(cni.BridgeConfig{StateDir: t.TempDir()})
	assert.Error(t, err, "PodCIDR required")
	_, err = cni.NewBridge(cni.BridgeConfig{PodCIDR: cfg.PodCIDR})
	assert.Error(t, err, "StateDir required")
}

func TestHostVethName(t *testing.T) {
	a := cni.HostVethName("abc", "eth0")
	assert.Len(t, a, 15)
	assert.True(t, strings.HasPrefix(a, "veth"))
	assert.Equal(t, a, cni.HostVethName("abc", "eth0"), "deterministic")
	assert.NotEqual(t, a, cni.HostVethName("abc", "net1"))
	assert.NotEqual(t, a, cni.HostVethName("abd", "eth0"))
}

func TestBridgeIPv6(t *testing.T) {
	env := cnitest.NewEnv(t)
	env.PodCIDR = netip.MustParsePrefix(fmt.Sprintf("fd00:251:%x::/64", cnitest.RandomByte()))
	b := newBridge(t, env)
	nsA, nsB := env.NewPodNS(t), env.NewPodNS(t)
	a, bb := env.Attachment(nsA), env.Attachment(nsB)
	resA, err := b.Setup(t.Context(), a)
	require.NoError(t, err)
	resB, err := b.Setup(t.Context(), bb)
	require.NoError(t, err)
	ipA, ipB := resA.PodIPs()[0], resB.PodIPs()[0]
	assert.True(t, ipA.Is6() && env.PodCIDR.Contains(ipA), "%s", ipA)
	assert.Equal(t, netip.MustParsePrefix("::/0"), resA.Routes[0].Dst)
	require.NoError(t, b.Check(t.Context(), a))

	assert.Equal(t, ipB, cnitest.RequireEcho(t, nsB.Path(), cnitest.EchoServer(t, nsA.Path(), ipA)).Addr())
	assert.Equal(t, ipA, cnitest.RequireEcho(t, nsA.Path(), cnitest.EchoServer(t, env.NodeNS.Path(), b.Gateway())).Addr(), "pod reaches the v6 gateway")
	require.NoError(t, b.Teardown(t.Context(), a))
	require.NoError(t, b.Teardown(t.Context(), bb))
	assert.ElementsMatch(t, []string{"lo", env.BridgeName}, env.NodeLinks(t))
}
