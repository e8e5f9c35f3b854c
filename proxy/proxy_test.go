package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/proxy"
)

// TestClusterIPReachesEveryReadyBackend: a client pod reaches
// ClusterIP:port over TCP and UDP and, over many requests, every ready
// backend; a backend that stops being ready, then one whose endpoint is
// deleted, stops getting traffic after a Sync.
func TestClusterIPReachesEveryReadyBackend(t *testing.T) {
	for _, tc := range []struct {
		proto  corev1.Protocol
		brnfOn bool
	}{{corev1.ProtocolTCP, false}, {corev1.ProtocolUDP, false}, {corev1.ProtocolTCP, true}} {
		proto := tc.proto
		t.Run(fmt.Sprintf("%s/bridge-nf-call-iptables=%t", proto, tc.brnfOn), func(t *testing.T) {
			n := newNodeBrNF(t, tc.brnfOn)
			client := n.addPod(t)
			var backends []*pod
			var eps []ep
			for range 3 {
				b := n.addPod(t)
				serve(t, b.path(), b.ip, backendPort, proto)
				backends = append(backends, b)
				eps = append(eps, ep{ip: b.ip})
			}
			ip := clusterIP()
			assert.Contains(t, n.ipRouteGet(t, ip.String()), "dev "+n.uplink, "the service range is routed to the uplink")
			assert.NotContains(t, n.ipRouteGet(t, ip.String()), " via ", "not through a default gateway")
			slice := newSlice("web", "web-1", "http", backendPort, proto, eps...)
			n.create(t, newService("web", ip, svcPort("http", 80, proto)), slice)
			p := n.proxier(t)
			require.NoError(t, p.Sync(t.Context()))

			vip := netip.AddrPortFrom(ip, 80)
			got := hits(t, client.path(), vip, proto, 60)
			for _, b := range backends {
				assert.Positive(t, got[b.ip], "backend %s gets traffic: %v", b.ip, got)
			}
			assert.Len(t, got, 3)

			// Not ready: out after a Sync.
			slice.Endpoints[0].Conditions.Ready = ptrTo(false)
			n.updateSlice(t, slice)
			require.NoError(t, p.Sync(t.Context()))
			got = hits(t, client.path(), vip, proto, 40)
			assert.Zero(t, got[backends[0].ip], "a not-ready backend gets no traffic: %v", got)
			assert.Positive(t, got[backends[1].ip])
			assert.Positive(t, got[backends[2].ip])

			// Deleted from the slice: out too.
			slice.Endpoints = slice.Endpoints[:2]
			n.updateSlice(t, slice)
			require.NoError(t, p.Sync(t.Context()))
			got = hits(t, client.path(), vip, proto, 20)
			assert.Equal(t, map[netip.Addr]int{backends[1].ip: 20}, got)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestHairpin: a backend reaches itself through its Service. The
// connection leaves the node through the interface it came in on, so it is
// masqueraded to the bridge's gateway address (otherwise the backend would
// answer itself directly and the client would drop the reply).
func TestHairpin(t *testing.T) {
	for _, brnfOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("bridge-nf-call-iptables=%t", brnfOn), func(t *testing.T) {
			n := newNodeBrNF(t, brnfOn)
			b := n.addPod(t)
			serve(t, b.path(), b.ip, backendPort, corev1.ProtocolTCP)
			ip := clusterIP()
			n.create(t, newService("self", ip, svcPort("", 80, corev1.ProtocolTCP)),
				newSlice("self", "self-1", "", backendPort, corev1.ProtocolTCP, ep{ip: b.ip}))
			p := n.proxier(t)
			require.NoError(t, p.Sync(t.Context()))
			for range 5 {
				who, seen := askOK(t, b.path(), netip.AddrPortFrom(ip, 80), corev1.ProtocolTCP)
				assert.Equal(t, b.ip, who)
				assert.Equal(t, n.bridge.Gateway(), seen.Addr(), "hairpin traffic is masqueraded")
			}
		})
	}
}

// TestNoEndpointsRefusesQuickly: a Service without ready endpoints
// rejects connections (TCP reset, ICMP port unreachable for UDP) from pods
// and from the host instead of letting them time out.
func TestNoEndpointsRefusesQuickly(t *testing.T) {
	n := newNode(t)
	client := n.addPod(t)
	b := n.addPod(t)
	serve(t, b.path(), b.ip, backendPort, corev1.ProtocolTCP)
	serve(t, b.path(), b.ip, backendPort, corev1.ProtocolUDP)
	ip := clusterIP()
	n.create(t,
		newService("empty", ip, svcPort("t", 80, corev1.ProtocolTCP), svcPort("u", 53, corev1.ProtocolUDP)),
		newSlice("empty", "empty-t", "t", backendPort, corev1.ProtocolTCP, ep{ip: b.ip, notReady: true}),
		newSlice("empty", "empty-u", "u", backendPort, corev1.ProtocolUDP, ep{ip: b.ip, notReady: true}))
	p := n.proxier(t)
	require.NoError(t, p.Sync(t.Context()))
	for _, from := range []string{client.path(), n.env.NodeNS.Path()} {
		for _, c := range []struct {
			port  uint16
			proto corev1.Protocol
		}{{80, corev1.ProtocolTCP}, {53, corev1.ProtocolUDP}} {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			_, _, err := ask(ctx, from, netip.AddrPortFrom(ip, c.port), c.proto)
			cancel()
			if c.proto == corev1.ProtocolUDP && from == n.env.NodeNS.Path() {
				// A local sender's datagram is dropped in the output hook
				// after the ICMP error is sent: the write itself fails.
				assert.True(t, errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPERM), "UDP from the host: %v", err)
				continue
			}
			assert.ErrorIs(t, err, syscall.ECONNREFUSED, "%s from %s", c.proto, from)
		}
	}
}

// TestHostReachesClusterIP: processes in the node's own namespace reach
// Services too (output hook).
func TestHostReachesClusterIP(t *testing.T) {
	n := newNode(t)
	var backends []netip.Addr
	var eps []ep
	for range 2 {
		b := n.addPod(t)
		serve(t, b.path(), b.ip, backendPort, corev1.ProtocolTCP)
		backends = append(backends, b.ip)
		eps = append(eps, ep{ip: b.ip})
	}
	ip := clusterIP()
	n.create(t, newService("web", ip, svcPort("http", 80, corev1.ProtocolTCP)),
		newSlice("web", "web-1", "http", backendPort, corev1.ProtocolTCP, eps...))
	p := n.proxier(t)
	require.NoError(t, p.Sync(t.Context()))
	got := hits(t, n.env.NodeNS.Path(), netip.AddrPortFrom(ip, 80), corev1.ProtocolTCP, 30)
	assert.ElementsMatch(t, backends, slices.Collect(maps.Keys(got)), "the host reaches every backend")
}

// TestMasqueradeFromOutsideClusterCIDR: a machine outside the pod network
// routing the service range to the node reaches the Service, masqueraded
// so replies return through the node; with no ClusterCIDR configured the
// backend sees the real client.
func TestMasqueradeFromOutsideClusterCIDR(t *testing.T) {
	for _, tc := range []struct {
		name string
		cidr netip.Prefix
		masq bool
	}{{"masqueraded", clusterCIDR, true}, {"no ClusterCIDR", netip.Prefix{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			b := n.addPod(t)
			serve(t, b.path(), b.ip, backendPort, corev1.ProtocolTCP)
			ext, extIP := n.addExternal(t)
			ip := clusterIP()
			n.create(t, newService("web", ip, svcPort("http", 80, corev1.ProtocolTCP)),
				newSlice("web", "web-1", "http", backendPort, corev1.ProtocolTCP, ep{ip: b.ip}))
			p := n.proxier(t, func(c *proxy.Config) { c.ClusterCIDR = tc.cidr })
			require.NoError(t, p.Sync(t.Context()))
			who, seen := askOK(t, ext.Path(), netip.AddrPortFrom(ip, 80), corev1.ProtocolTCP)
			assert.Equal(t, b.ip, who)
			if tc.masq {
				assert.Equal(t, n.bridge.Gateway(), seen.Addr())
			} else {
				assert.Equal(t, extIP, seen.Addr())
			}
		})
	}
}
