package dns_test

import (
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/dns"
)

// fixtures is the cluster most tests query.
func fixtures() []runtime.Object {
	pg := []discoveryv1.EndpointPort{slicePort("pg", corev1.ProtocolTCP, 5432)}
	return []runtime.Object{
		service("default", "web", "10.96.0.20", port("http", corev1.ProtocolTCP, 80), port("dns", corev1.ProtocolUDP, 53)),
		slice("default", "web", "web-abcde", discoveryv1.AddressTypeIPv4, nil, ep{ip: "10.244.0.5", ready: true}),
		service("default", "dual", "10.96.0.21,fd00::21", port("http", corev1.ProtocolTCP, 80)),
		service("default", "db", corev1.ClusterIPNone, port("pg", corev1.ProtocolTCP, 5432)),
		slice("default", "db", "db-abcde", discoveryv1.AddressTypeIPv4, pg,
			ep{ip: "10.244.1.10", host: "db-0", ready: true},
			ep{ip: "10.244.1.11", host: "db-1", ready: true},
			ep{ip: "10.244.1.12", host: "db-2", ready: false},
			ep{ip: "10.244.1.13", ready: true}),
		service("default", "empty", corev1.ClusterIPNone),
		externalName("default", "ext-in", "web.default.svc.cluster.local"),
		service("team", "api", "10.96.0.30", port("", corev1.ProtocolTCP, 8080)),
	}
}

func TestClusterRecords(t *testing.T) {
	e := start(t, nil, fixtures()...)
	const (
		ok = mdns.RcodeSuccess
		nx = mdns.RcodeNameError
	)
	tests := []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string
		soa    bool // negative answer: SOA in authority
	}{
		{"web.default.svc.cluster.local.", mdns.TypeA, ok, []string{"10.96.0.20"}, false},
		{"web.default.svc.cluster.local.", mdns.TypeAAAA, ok, nil, true},
		{"web.default.svc.cluster.local.", mdns.TypeTXT, ok, nil, true},
		{"dual.default.svc.cluster.local.", mdns.TypeA, ok, []string{"10.96.0.21"}, false},
		{"dual.default.svc.cluster.local.", mdns.TypeAAAA, ok, []string{"fd00::21"}, false},
		{"api.team.svc.cluster.local.", mdns.TypeA, ok, []string{"10.96.0.30"}, false},
		{"missing.default.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"web.nons.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		// headless: one record per ready endpoint, none → NXDOMAIN
		{"db.default.svc.cluster.local.", mdns.TypeA, ok, []string{"10.244.1.10", "10.244.1.11", "10.244.1.13"}, false},
		{"db.default.svc.cluster.local.", mdns.TypeAAAA, ok, nil, true},
		{"empty.default.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"db-0.db.default.svc.cluster.local.", mdns.TypeA, ok, []string{"10.244.1.10"}, false},
		{"db-0.db.default.svc.cluster.local.", mdns.TypeAAAA, ok, nil, true},
		{"db-2.db.default.svc.cluster.local.", mdns.TypeA, nx, nil, true}, // not ready
		{"10-244-1-13.db.default.svc.cluster.local.", mdns.TypeA, ok, []string{"10.244.1.13"}, false},
		{"nope.db.default.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"db-0.web.default.svc.cluster.local.", mdns.TypeA, nx, nil, true}, // not headless
		// SRV
		{"_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, ok, []string{"0 100 80 web.default.svc.cluster.local."}, false},
		{"_dns._udp.web.default.svc.cluster.local.", mdns.TypeSRV, ok, []string{"0 100 53 web.default.svc.cluster.local."}, false},
		{"_dns._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, nx, nil, true},
		{"_http._tcp.web.default.svc.cluster.local.", mdns.TypeA, ok, nil, true},
		{"_tcp.web.default.svc.cluster.local.", mdns.TypeA, ok, nil, true},
		{"_sctp.web.default.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"web.default.svc.cluster.local.", mdns.TypeSRV, ok, []string{"0 50 80 web.default.svc.cluster.local.", "0 50 53 web.default.svc.cluster.local."}, false},
		{"_http._tcp.api.team.svc.cluster.local.", mdns.TypeSRV, nx, nil, true}, // unnamed port
		{"_pg._tcp.db.default.svc.cluster.local.", mdns.TypeSRV, ok, []string{
			"0 33 5432 db-0.db.default.svc.cluster.local.",
			"0 33 5432 db-1.db.default.svc.cluster.local.",
			"0 33 5432 10-244-1-13.db.default.svc.cluster.local."}, false},
		// ExternalName inside the zone: CNAME chased
		{"ext-in.default.svc.cluster.local.", mdns.TypeA, ok, []string{"web.default.svc.cluster.local.", "10.96.0.20"}, false},
		{"ext-in.default.svc.cluster.local.", mdns.TypeCNAME, ok, []string{"web.default.svc.cluster.local."}, false},
		// structure of the zone
		{"cluster.local.", mdns.TypeA, ok, nil, true},
		{"cluster.local.", mdns.TypeNS, ok, []string{"ns.dns.cluster.local."}, false},
		{"svc.cluster.local.", mdns.TypeA, ok, nil, true},
		{"default.svc.cluster.local.", mdns.TypeA, ok, nil, true},
		{"nons.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"dns-version.cluster.local.", mdns.TypeTXT, ok, []string{`"1.1.0"`}, false},
		{"other.cluster.local.", mdns.TypeA, nx, nil, true},
		// pods, insecure mode
		{"10-1-2-3.default.pod.cluster.local.", mdns.TypeA, ok, []string{"10.1.2.3"}, false},
		{"10-1-2-3.anyns.pod.cluster.local.", mdns.TypeAAAA, ok, nil, true},
		{"fd00--1.default.pod.cluster.local.", mdns.TypeAAAA, ok, []string{"fd00::1"}, false},
		{"10-1-2-300.default.pod.cluster.local.", mdns.TypeA, nx, nil, true},
		{"bogus.default.pod.cluster.local.", mdns.TypeA, nx, nil, true},
		{"default.pod.cluster.local.", mdns.TypeA, ok, nil, true},
		// what an ndots:5 search list asks first
		{"web.default.svc.cluster.local.default.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"web.default.svc.cluster.local.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		{"web.default.svc.cluster.local.cluster.local.", mdns.TypeA, nx, nil, true},
		{"web.default.default.svc.cluster.local.", mdns.TypeA, nx, nil, true},
		// PTR
		{"20.0.96.10.in-addr.arpa.", mdns.TypePTR, ok, []string{"web.default.svc.cluster.local."}, false},
		{"10.1.244.10.in-addr.arpa.", mdns.TypePTR, ok, []string{"db-0.db.default.svc.cluster.local."}, false},
		{"13.1.244.10.in-addr.arpa.", mdns.TypePTR, ok, []string{"10-244-1-13.db.default.svc.cluster.local."}, false},
		{"1.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", mdns.TypePTR, ok, []string{"dual.default.svc.cluster.local."}, false},
		{"20.0.96.10.in-addr.arpa.", mdns.TypeA, ok, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+mdns.TypeToString[tt.qtype], func(t *testing.T) {
			resp := e.query(t, tt.name, tt.qtype)
			assert.Equal(t, mdns.RcodeToString[tt.rcode], mdns.RcodeToString[resp.Rcode])
			if tt.answer == nil {
				tt.answer = []string{}
			}
			assert.ElementsMatch(t, tt.answer, rdata(resp.Answer))
			assert.Equal(t, tt.soa, hasSOA(resp), "authority: %v", resp.Ns)
			assert.True(t, resp.Authoritative)
			for _, rr := range resp.Answer {
				assert.Equal(t, uint32(5), rr.Header().Ttl)
			}
		})
	}
}

func TestSRVAdditionalAddresses(t *testing.T) {
	e := start(t, nil, fixtures()...)
	resp := e.query(t, "_pg._tcp.db.default.svc.cluster.local.", mdns.TypeSRV)
	var extra []string
	for _, rr := range resp.Extra {
		if a, ok := rr.(*mdns.A); ok {
			extra = append(extra, a.Hdr.Name+" "+a.A.String())
		}
	}
	assert.ElementsMatch(t, []string{
		"db-0.db.default.svc.cluster.local. 10.244.1.10",
		"db-1.db.default.svc.cluster.local. 10.244.1.11",
		"10-244-1-13.db.default.svc.cluster.local. 10.244.1.13",
	}, extra)

	resp = e.query(t, "_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV)
	require.Len(t, resp.Extra, 1)
	assert.Equal(t, "web.default.svc.cluster.local.", resp.Extra[0].Header().Name)
}

func TestCaseInsensitive(t *testing.T) {
	e := start(t, nil, fixtures()...)
	resp := e.query(t, "WEB.Default.Svc.CLUSTER.local.", mdns.TypeA)
	require.Equal(t, mdns.RcodeSuccess, resp.Rcode)
	require.Len(t, resp.Answer, 1)
	assert.Equal(t, "WEB.Default.Svc.CLUSTER.local.", resp.Answer[0].Header().Name, "answers carry the question's spelling")
	assert.Equal(t, "10.96.0.20", resp.Answer[0].(*mdns.A).A.String())
}

func TestCustomDomainAndTTL(t *testing.T) {
	e := start(t, func(c *dns.Config) { c.Domain = "Corp.Example."; c.TTL = 30 * time.Second }, fixtures()...)
	resp := e.query(t, "web.default.svc.corp.example.", mdns.TypeA)
	require.Equal(t, []string{"10.96.0.20"}, rdata(resp.Answer))
	assert.Equal(t, uint32(30), resp.Answer[0].Header().Ttl)
	resp = e.query(t, "web.default.svc.cluster.local.", mdns.TypeA)
	assert.Equal(t, mdns.RcodeRefused, resp.Rcode, "cluster.local is not the zone any more and nothing is forwarded")
	resp = e.query(t, "nope.default.svc.corp.example.", mdns.TypeA)
	require.True(t, hasSOA(resp))
	soa := resp.Ns[0].(*mdns.SOA)
	assert.Equal(t, "corp.example.", soa.Hdr.Name)
	assert.Equal(t, uint32(30), soa.Minttl)
}

func TestTruncationAndTCPFallback(t *testing.T) {
	e := start(t, nil, service("default", "big", corev1.ClusterIPNone), bigSlice("default", "big", 300))
	name := "big.default.svc.cluster.local."

	resp := e.query(t, name, mdns.TypeA)
	assert.True(t, resp.Truncated, "300 addresses do not fit 512 bytes")
	assert.Less(t, len(resp.Answer), 300)
	resp.Compress = true
	packed, err := resp.Pack()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(packed), mdns.MinMsgSize)

	m := new(mdns.Msg)
	m.SetQuestion(name, mdns.TypeA)
	resp = e.exchange(t, m, "tcp")
	assert.False(t, resp.Truncated)
	assert.Len(t, resp.Answer, 300)

	// A client with a large EDNS0 buffer gets everything over UDP.
	m = new(mdns.Msg)
	m.SetQuestion(name, mdns.TypeA)
	m.SetEdns0(8192, false)
	resp = e.exchange(t, m, "udp")
	assert.False(t, resp.Truncated)
	assert.Len(t, resp.Answer, 300)
	require.NotNil(t, resp.IsEdns0(), "EDNS0 answered with EDNS0")

	// The miekg client retries over TCP on TC like a stub resolver.
	c := &mdns.Client{Net: "udp"}
	m = new(mdns.Msg)
	m.SetQuestion(name, mdns.TypeA)
	resp, _, err = c.Exchange(m, e.addr)
	require.NoError(t, err)
	if resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.Exchange(m, e.addr)
		require.NoError(t, err)
	}
	assert.Len(t, resp.Answer, 300)
}
