package dns_test

import (
	"context"
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/dns"
	"github.com/podkit/podkit/internal/testutil"
)

// TestListenInNetns serves the cluster DNS address 10.96.0.10:53 from
// inside a network namespace (where it is assigned to lo), as a pod-like
// DNS namespace would, and queries it from inside that namespace over UDP
// and TCP. No packet leaves the test's namespace.
func TestListenInNetns(t *testing.T) {
	testutil.RequireRoot(t)
	ns, err := netns.New(t.TempDir(), "dns")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ns.Remove()) })
	h, err := ns.Handle()
	require.NoError(t, err)
	defer h.Close()
	lo, err := h.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, h.LinkSetUp(lo))
	require.NoError(t, h.AddrAdd(lo, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 96, 0, 10), Mask: net.CIDRMask(32, 32)}}))

	ctx := context.Background()
	socks, err := dns.ListenIn(ctx, ns.Path(), "10.96.0.10:53")
	require.NoError(t, err)
	e := startWith(t, dns.Config{Sockets: socks}, fixtures()...)
	assert.Equal(t, "10.96.0.10:53", e.addr)

	for _, proto := range []string{"udp", "tcp"} {
		var resp *mdns.Msg
		err := ns.Do(func() error {
			m := new(mdns.Msg)
			m.SetQuestion("web.default.svc.cluster.local.", mdns.TypeA)
			c := &mdns.Client{Net: proto, Timeout: 5 * time.Second}
			var err error
			resp, _, err = c.Exchange(m, "10.96.0.10:53")
			return err
		})
		require.NoError(t, err, proto)
		assert.Equal(t, []string{"10.96.0.20"}, rdata(resp.Answer), proto)
	}

	// The apex NS names the server and its glue is the listen address.
	var resp *mdns.Msg
	require.NoError(t, ns.Do(func() error {
		m := new(mdns.Msg)
		m.SetQuestion("ns.dns.cluster.local.", mdns.TypeA)
		var err error
		resp, _, err = (&mdns.Client{Timeout: 5 * time.Second}).Exchange(m, "10.96.0.10:53")
		return err
	}))
	assert.Equal(t, []string{"10.96.0.10"}, rdata(resp.Answer))

	_, err = dns.ListenIn(ctx, "/nonexistent/netns", "127.0.0.1:0")
	assert.Error(t, err)
}
