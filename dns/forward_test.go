package dns_test

import (
	"context"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podkit/podkit/dns"
)

func TestForwarding(t *testing.T) {
	up := startUpstream(t, map[string][]string{
		"example.org. A":            {"192.0.2.1"},
		"www.example.com. A":        {"192.0.2.53"},
		"www.example.com. AAAA":     {"2001:db8::53"},
		"4.3.2.1.in-addr.arpa. PTR": {"host.example.org."},
	})
	objs := append(fixtures(), externalName("default", "ext", "www.example.com"))
	e := start(t, func(c *dns.Config) { c.Upstreams = []string{up.addr} }, objs...)

	resp := e.query(t, "example.org.", mdns.TypeA)
	assert.Equal(t, mdns.RcodeSuccess, resp.Rcode)
	assert.Equal(t, []string{"192.0.2.1"}, rdata(resp.Answer))
	assert.True(t, resp.RecursionAvailable)
	assert.False(t, resp.Authoritative)

	resp = e.query(t, "missing.example.org.", mdns.TypeA)
	assert.Equal(t, mdns.RcodeNameError, resp.Rcode, "the upstream's NXDOMAIN is passed on")

	// Unknown reverse names fall through to the upstream, known ones do not.
	resp = e.query(t, "4.3.2.1.in-addr.arpa.", mdns.TypePTR)
	assert.Equal(t, []string{"host.example.org."}, rdata(resp.Answer))

	// ExternalName: CNAME plus the upstream's addresses in one answer.
	resp = e.query(t, "ext.default.svc.cluster.local.", mdns.TypeA)
	assert.Equal(t, mdns.RcodeSuccess, resp.Rcode)
	assert.Equal(t, []string{"www.example.com.", "192.0.2.53"}, rdata(resp.Answer))
	resp = e.query(t, "ext.default.svc.cluster.local.", mdns.TypeAAAA)
	assert.Equal(t, []string{"www.example.com.", "2001:db8::53"}, rdata(resp.Answer))

	// Over TCP the exchange with the upstream is TCP too.
	m := new(mdns.Msg)
	m.SetQuestion("example.org.", mdns.TypeA)
	resp = e.exchange(t, m, "tcp")
	assert.Equal(t, []string{"192.0.2.1"}, rdata(resp.Answer))

	// Cluster names never leave the server.
	drain(up.got)
	e.query(t, "nope.default.svc.cluster.local.", mdns.TypeA)
	e.query(t, "web.default.svc.cluster.local.default.svc.cluster.local.", mdns.TypeA)
	e.query(t, "20.0.96.10.in-addr.arpa.", mdns.TypePTR)
	assert.Empty(t, drain(up.got))
}

func TestForwardingFailover(t *testing.T) {
	up := startUpstream(t, map[string][]string{"example.org. A": {"192.0.2.1"}})
	dead := deadAddr(t)
	e := start(t, func(c *dns.Config) {
		c.Upstreams = []string{dead, up.addr}
		c.ForwardTimeout = 200 * time.Millisecond
	})
	// Whichever upstream the rotation starts at, the live one answers.
	for range 3 {
		resp := e.query(t, "example.org.", mdns.TypeA)
		assert.Equal(t, []string{"192.0.2.1"}, rdata(resp.Answer))
	}
}

func TestNoUpstream(t *testing.T) {
	e := start(t, nil)
	resp := e.query(t, "example.org.", mdns.TypeA)
	assert.Equal(t, mdns.RcodeRefused, resp.Rcode)
	assert.False(t, resp.RecursionAvailable)
	resp = e.query(t, "4.3.2.1.in-addr.arpa.", mdns.TypePTR)
	assert.Equal(t, mdns.RcodeRefused, resp.Rcode)

	e = start(t, func(c *dns.Config) { c.Upstreams = []string{deadAddr(t)}; c.ForwardTimeout = 200 * time.Millisecond })
	resp = e.query(t, "example.org.", mdns.TypeA)
	assert.Equal(t, mdns.RcodeServerFailure, resp.Rcode, "no upstream answered")
}

func TestMetrics(t *testing.T) {
	up := startUpstream(t, map[string][]string{"example.org. A": {"192.0.2.1"}})
	reg := prometheus.NewRegistry()
	e := start(t, func(c *dns.Config) { c.Registerer = reg; c.Upstreams = []string{up.addr} }, fixtures()...)
	e.query(t, "web.default.svc.cluster.local.", mdns.TypeA)
	e.query(t, "nope.default.svc.cluster.local.", mdns.TypeA)
	e.query(t, "example.org.", mdns.TypeA)

	server := "dns://" + e.addr
	assert.Equal(t, 2.0, counter(t, reg, "coredns_dns_requests_total",
		map[string]string{"server": server, "zone": "cluster.local.", "proto": "udp", "family": "1", "type": "A"}))
	assert.Equal(t, 1.0, counter(t, reg, "coredns_dns_responses_total",
		map[string]string{"server": server, "zone": "cluster.local.", "rcode": "NXDOMAIN"}))
	assert.Equal(t, 1.0, counter(t, reg, "coredns_dns_responses_total",
		map[string]string{"server": server, "zone": ".", "rcode": "NOERROR"}))
	assert.Equal(t, 1.0, counter(t, reg, "coredns_forward_responses_total",
		map[string]string{"to": up.addr, "rcode": "NOERROR"}))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "coredns_dns_request_duration_seconds" {
			assert.Len(t, mf.GetMetric(), 2, "one histogram per zone and type")
		}
	}

	_, err = dns.New(dns.Config{Client: e.cs, Addr: "127.0.0.1:0", Registerer: reg})
	assert.Error(t, err, "a second server on the same registry")
}

func TestConfigErrors(t *testing.T) {
	cs := fake.NewClientset()
	for name, cfg := range map[string]dns.Config{
		"no client":    {Addr: "127.0.0.1:0"},
		"no address":   {Client: cs},
		"bad upstream": {Client: cs, Addr: "127.0.0.1:0", Upstreams: []string{"resolver.example:53"}},
		"bad domain":   {Client: cs, Addr: "127.0.0.1:0", Domain: "bad domain"},
		"bad ttl":      {Client: cs, Addr: "127.0.0.1:0", TTL: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := dns.New(cfg)
			assert.ErrorIs(t, err, dns.ErrConfig)
		})
	}
}

func TestHostUpstreams(t *testing.T) {
	got, err := dns.HostUpstreams(strings.NewReader("# comment\nnameserver 192.0.2.1\nnameserver 2001:db8::1\nsearch example.org\nnameserver bogus\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.1:53", "[2001:db8::1]:53"}, got)
	_, err = dns.HostUpstreams(strings.NewReader("search example.org\n"))
	assert.Error(t, err)
}

func TestRunOnceAndClose(t *testing.T) {
	srv, err := dns.New(dns.Config{Client: fake.NewClientset(), Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close())
	assert.ErrorIs(t, srv.Run(context.Background()), dns.ErrStarted)
}

// deadAddr returns a 127.0.0.1 UDP address nothing listens on.
func deadAddr(t testing.TB) string {
	s, err := dns.Listen(context.Background(), "127.0.0.1:0")
	require.NoError(t, err)
	addr := s.Addr().String()
	require.NoError(t, s.Close())
	return addr
}

func drain(c chan string) []string {
	var out []string
	for {
		select {
		case s := <-c:
			out = append(out, s)
		default:
			return out
		}
	}
}

// counter returns the value of the named counter with exactly labels.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}
