package cnitest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/netns"
)

// Factory builds the Networker under test for env: it must put its
// node-level state in env.NodeNS, address pods from env.PodCIDR and keep
// state under env.StateDir, and register its own cleanup with t.Cleanup.
type Factory func(t *testing.T, env *Env) cni.Networker

// Options tunes the suite.
type Options struct {
	// Concurrent is how many Setups run at once (default 50).
	Concurrent int
	// Cycles is how many Setup/Teardown cycles run back to back (default 50).
	Cycles int
}

// Run runs the conformance suite. Every subtest gets its own Env.
func Run(t *testing.T, factory Factory, opts Options) {
	if opts.Concurrent == 0 {
		opts.Concurrent = 50
	}
	if opts.Cycles == 0 {
		opts.Cycles = 50
	}
	tests := []struct {
		name string
		fn   func(*testing.T, *Env, cni.Networker, Options)
	}{
		{"SetupConfiguresPod", testSetupConfiguresPod},
		{"TeardownIsIdempotent", testTeardownIdempotent},
		{"TeardownAfterNetNSGone", testTeardownAfterNetNSGone},
		{"SetupRetryConverges", testSetupRetry},
		{"PodsReachEachOtherAndGateway", testConnectivity},
		{"Check", testCheck},
		{"ConcurrentSetupsGetDistinctIPs", testConcurrent},
		{"CyclesLeaveNothingBehind", testCycles},
		{"InvalidAttachment", testInvalid},
		{"GCReleasesWhatIsNotKept", testGC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := NewEnv(t)
			n := factory(t, env)
			tc.fn(t, env, n, opts)
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// podIP returns the single sandbox address of res, checked against the CIDR.
func podIP(t *testing.T, env *Env, res *cni.Result) netip.Addr {
	t.Helper()
	require.NotNil(t, res)
	ips := res.PodIPs()
	require.Len(t, ips, 1, "result %+v", res)
	require.True(t, env.PodCIDR.Contains(ips[0]), "%s outside %s", ips[0], env.PodCIDR)
	return ips[0]
}

func gateway(t *testing.T, res *cni.Result) netip.Addr {
	t.Helper()
	for _, ip := range res.IPs {
		if ip.Gateway.IsValid() {
			return ip.Gateway
		}
	}
	t.Fatalf("result has no gateway: %+v", res)
	return netip.Addr{}
}

// podState describes the pod side: interface flags, addresses, default gw.
type podState struct {
	ifUp, loUp bool
	addrs      []netip.Prefix
	defaultGW  netip.Addr
	ifExists   bool
}

func inspectPod(t *testing.T, nsPath, ifName string) podState {
	t.Helper()
	h, err := netns.HandleAt(nsPath)
	require.NoError(t, err)
	defer h.Close()
	var st podState
	lo, err := h.LinkByName("lo")
	require.NoError(t, err)
	st.loUp = lo.Attrs().Flags&net.FlagUp != 0
	l, err := h.LinkByName(ifName)
	if err != nil {
		var nf netlink.LinkNotFoundError
		require.ErrorAs(t, err, &nf)
		return st
	}
	st.ifExists = true
	st.ifUp = l.Attrs().Flags&net.FlagUp != 0
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		st.addrs = append(st.addrs, netip.PrefixFrom(ip.Unmap(), ones))
	}
	routes, err := h.RouteList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, r := range routes {
		if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw != nil {
			st.defaultGW, _ = netip.AddrFromSlice(r.Gw.To4())
		}
	}
	return st
}

func testSetupConfiguresPod(t *testing.T, env *Env, n cni.Networker, _ Options) {
	ns := env.NewPodNS(t)
	a := env.Attachment(ns)
	res, err := n.Setup(ctx(t), a)
	require.NoError(t, err)
	ip := podIP(t, env, res)
	gw := gateway(t, res)
	st := inspectPod(t, ns.Path(), a.IfName)
	assert.True(t, st.ifExists && st.ifUp, "%s up in pod", a.IfName)
	assert.True(t, st.loUp, "lo up in pod")
	assert.Contains(t, st.addrs, netip.PrefixFrom(ip, env.PodCIDR.Bits()))
	assert.Equal(t, gw, st.defaultGW, "default route via gateway")
	require.NoError(t, n.Teardown(ctx(t), a))
	st = inspectPod(t, ns.Path(), a.IfName)
	assert.False(t, st.ifExists, "%s removed by Teardown", a.IfName)
}

func testTeardownIdempotent(t *testing.T, env *Env, n cni.Networker, _ Options) {
	ns := env.NewPodNS(t)
	never := env.Attachment(ns)
	require.NoError(t, n.Teardown(ctx(t), never), "teardown of something never set up")
	noNS := env.Attachment(nil)
	require.NoError(t, n.Teardown(ctx(t), noNS), "teardown without a namespace path")
	a := env.Attachment(ns)
	_, err := n.Setup(ctx(t), a)
	require.NoError(t, err)
	require.NoError(t, n.Teardown(ctx(t), a))
	require.NoError(t, n.Teardown(ctx(t), a), "second teardown")
}

func testTeardownAfterNetNSGone(t *testing.T, env *Env, n cni.Networker, _ Options) {
	ns := env.NewPodNS(t)
	a := env.Attachment(ns)
	before := env.NodeLinks(t)
	_, err := n.Setup(ctx(t), a)
	require.NoError(t, err)
	require.NoError(t, ns.Remove())
	require.NoError(t, n.Teardown(ctx(t), a), "teardown after the namespace is gone")
	// The kernel destroys an unpinned namespace (and the veth ends in it)
	// asynchronously, so wait for the host end to go.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, withoutBridge(before, env), withoutBridge(env.NodeLinks(t), env), "node links after teardown")
	}, 10*time.Second, 20*time.Millisecond)
}

func testSetupRetry(t *testing.T, env *Env, n cni.Networker, _ Options) {
	ns := env.NewPodNS(t)
	a := env.Attachment(ns)
	_, err := n.Setup(ctx(t), a)
	require.NoError(t, err)
	res, err := n.Setup(ctx(t), a)
	require.NoError(t, err, "a retried Setup converges")
	ip := podIP(t, env, res)
	st := inspectPod(t, ns.Path(), a.IfName)
	assert.Equal(t, []netip.Prefix{netip.PrefixFrom(ip, env.PodCIDR.Bits())}, st.addrs, "one address after retry")
	peer := env.NewPodNS(t)
	b := env.Attachment(peer)
	_, err = n.Setup(ctx(t), b)
	require.NoError(t, err)
	RequireEcho(t, peer.Path(), EchoServer(t, ns.Path(), ip))
	require.NoError(t, n.Teardown(ctx(t), a))
	require.NoError(t, n.Teardown(ctx(t), b))
}

func testConnectivity(t *testing.T, env *Env, n cni.Networker, _ Options) {
	nsA, nsB := env.NewPodNS(t), env.NewPodNS(t)
	a, b := env.Attachment(nsA), env.Attachment(nsB)
	resA, err := n.Setup(ctx(t), a)
	require.NoError(t, err)
	resB, err := n.Setup(ctx(t), b)
	require.NoError(t, err)
	ipA, ipB := podIP(t, env, resA), podIP(t, env, resB)
	require.NotEqual(t, ipA, ipB)
	// Before anything is sent: the node routes the pod CIDR on the bridge.
	nh, err := env.NodeNS.Handle()
	require.NoError(t, err)
	br, err := nh.LinkByName(env.BridgeName)
	require.NoError(t, err)
	routes, err := nh.RouteGet(net.IP(ipA.AsSlice()))
	nh.Close()
	require.NoError(t, err)
	require.Len(t, routes, 1)
	require.Equal(t, br.Attrs().Index, routes[0].LinkIndex, "%s routes via the node bridge %s", ipA, env.BridgeName)

	srvA := EchoServer(t, nsA.Path(), ipA)
	srvB := EchoServer(t, nsB.Path(), ipB)
	assert.Equal(t, ipA, RequireEcho(t, nsA.Path(), srvB).Addr(), "B sees A's own address (no NAT inside the CIDR)")
	assert.Equal(t, ipB, RequireEcho(t, nsB.Path(), srvA).Addr())

	gw := gateway(t, resA)
	srvGW := EchoServer(t, env.NodeNS.Path(), gw)
	assert.Equal(t, ipA, RequireEcho(t, nsA.Path(), srvGW).Addr(), "pod reaches the gateway")
	// And the node reaches the pod.
	assert.Equal(t, gw, RequireEcho(t, env.NodeNS.Path(), srvB).Addr())

	require.NoError(t, n.Teardown(ctx(t), a))
	require.NoError(t, n.Teardown(ctx(t), b))
}

func testCheck(t *testing.T, env *Env, n cni.Networker, _ Options) {
	c, ok := n.(cni.Checker)
	if !ok {
		t.Skip("networker does not implement cni.Checker")
	}
	ns := env.NewPodNS(t)
	a := env.Attachment(ns)
	_, err := n.Setup(ctx(t), a)
	require.NoError(t, err)
	require.NoError(t, c.Check(ctx(t), a))

	h, err := ns.Handle()
	require.NoError(t, err)
	l, err := h.LinkByName(a.IfName)
	require.NoError(t, err)
	require.NoError(t, h.LinkDel(l))
	h.Close()
	err = c.Check(ctx(t), a)
	require.Error(t, err)
	assert.ErrorIs(t, err, cni.ErrNotAttached)
	require.NoError(t, n.Teardown(ctx(t), a))
}

func testConcurrent(t *testing.T, env *Env, n cni.Networker, opts Options) {
	before := env.NodeLinks(t)
	atts := make([]*cni.Attachment, opts.Concurrent)
	for i := range atts {
		atts[i] = env.Attachment(env.NewPodNS(t))
	}
	ips := make([]netip.Addr, len(atts))
	errs := make([]error, len(atts))
	var wg sync.WaitGroup
	for i, a := range atts {
		wg.Go(func() {
			res, err := n.Setup(ctx(t), a)
			errs[i] = err
			if err == nil {
				if p := res.PodIPs(); len(p) == 1 {
					ips[i] = p[0]
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	seen := map[netip.Addr]int{}
	for i, ip := range ips {
		require.True(t, env.PodCIDR.Contains(ip), "pod %d got %s", i, ip)
		if j, dup := seen[ip]; dup {
			t.Fatalf("pods %d and %d both got %s", j, i, ip)
		}
		seen[ip] = i
	}
	for i, a := range atts {
		wg.Go(func() { errs[i] = n.Teardown(ctx(t), a) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.ElementsMatch(t, withoutBridge(before, env), withoutBridge(env.NodeLinks(t), env), "node links after concurrent teardown")
}

func testCycles(t *testing.T, env *Env, n cni.Networker, opts Options) {
	// The first Setup creates the node bridge; measure after it.
	warm := env.NewPodNS(t)
	wa := env.Attachment(warm)
	_, err := n.Setup(ctx(t), wa)
	require.NoError(t, err)
	require.NoError(t, n.Teardown(ctx(t), wa))
	before := env.NodeLinks(t)
	for i := range opts.Cycles {
		ns, err := netns.New(env.RunDir, "cycle-"+RandomHex(6))
		require.NoError(t, err)
		a := env.Attachment(ns)
		_, err = n.Setup(ctx(t), a)
		if err == nil {
			err = n.Teardown(ctx(t), a)
		}
		require.NoError(t, errors.Join(err, ns.Remove()), "cycle %d", i)
	}
	assert.ElementsMatch(t, before, env.NodeLinks(t), "node links after %d cycles", opts.Cycles)
}

func testInvalid(t *testing.T, env *Env, n cni.Networker, _ Options) {
	_, err := n.Setup(ctx(t), &cni.Attachment{NetNS: env.NewPodNS(t).Path()})
	assert.ErrorIs(t, err, cni.ErrInvalidAttachment, "missing container ID")
	_, err = n.Setup(ctx(t), &cni.Attachment{ContainerID: "x"})
	assert.ErrorIs(t, err, cni.ErrInvalidAttachment, "missing netns")
	assert.ErrorIs(t, n.Teardown(ctx(t), &cni.Attachment{}), cni.ErrInvalidAttachment)
}

func testGC(t *testing.T, env *Env, n cni.Networker, _ Options) {
	gc, ok := n.(cni.GarbageCollector)
	if !ok {
		t.Skip("networker does not implement cni.GarbageCollector")
	}
	nsA, nsB := env.NewPodNS(t), env.NewPodNS(t)
	a, b := env.Attachment(nsA), env.Attachment(nsB)
	for _, x := range []*cni.Attachment{a, b} {
		_, err := n.Setup(ctx(t), x)
		require.NoError(t, err)
	}
	require.NoError(t, gc.GC(ctx(t), []*cni.Attachment{a}))
	assert.True(t, inspectPod(t, nsA.Path(), a.IfName).ifExists, "kept attachment survives")
	assert.False(t, inspectPod(t, nsB.Path(), b.IfName).ifExists, "collected attachment is gone")
	if c, ok := n.(cni.Checker); ok {
		require.NoError(t, c.Check(ctx(t), a))
		assert.ErrorIs(t, c.Check(ctx(t), b), cni.ErrNotAttached)
	}
	require.NoError(t, gc.GC(ctx(t), nil), "collect everything")
	assert.False(t, inspectPod(t, nsA.Path(), a.IfName).ifExists)
	require.NoError(t, n.Teardown(ctx(t), a), "teardown after GC")
}

// withoutBridge drops the node bridge (plugins may create it lazily).
func withoutBridge(links []string, env *Env) []string {
	return slices.DeleteFunc(slices.Clone(links), func(s string) bool { return s == env.BridgeName })
}
