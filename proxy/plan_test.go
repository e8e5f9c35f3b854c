package proxy

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func newTestProxier(t *testing.T) *Proxier {
	t.Helper()
	p, err := New(Config{Client: newFakeClient(), NodeName: "n1", ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16")})
	require.NoError(t, err)
	return p
}

// step plans the change to the given services (nil ports: deleted) as a
// sync would, records it as programmed, and returns the batch's text.
func step(p *Proxier, full bool, svcs map[types.NamespacedName][]*servicePort) string {
	var names []types.NamespacedName
	for n := range svcs {
		names = append(names, n)
	}
	slicesSortNames(names)
	var listed *objects
	if full {
		listed = &objects{}
	}
	b, ph, refs, _ := p.plan(names, svcs, listed)
	b.append(ph.batch())
	p.commit(names, svcs, refs, full)
	return b.String()
}

func slicesSortNames(ns []types.NamespacedName) {
	for i := range ns {
		for j := i + 1; j < len(ns); j++ {
			if ns[j].String() < ns[i].String() {
				ns[i], ns[j] = ns[j], ns[i]
			}
		}
	}
}

func tcpPort(ns, name, pname, ip string, port uint16, eps ...string) *servicePort {
	p := &servicePort{
		name:      portName{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}, Port: pname, Protocol: "TCP"},
		clusterIP: netip.MustParseAddr(ip),
		port:      port,
		proto:     unix.IPPROTO_TCP,
	}
	for _, e := range eps {
		p.endpoints = append(p.endpoints, netip.MustParseAddrPort(e))
	}
	return p
}

func TestPlanFullSync(t *testing.T) {
	p := newTestProxier(t)
	web := types.NamespacedName{Namespace: "default", Name: "web"}
	got := step(p, true, map[types.NamespacedName][]*servicePort{
		web: {tcpPort("default", "web", "http", "10.96.0.10", 80, "10.244.1.2:8080", "10.244.2.3:8080")},
	})
	t.Log("\n" + got)
	want := `add table
add map service-ips { type ipv4_addr . inet_proto . inet_service : verdict }
flush set service-ips
add map no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict }
flush set no-endpoint-services
add set cluster-ips { type ipv4_addr }
flush set cluster-ips
add set affinity-endpoints { type integer . ipv4_addr . inet_service }
flush set affinity-endpoints
add chain services
flush chain services
add rule services ip daddr . meta l4proto . th dport vmap @service-ips
add chain endpoints-check
flush chain endpoints-check
add rule endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
add chain reject-chain
flush chain reject-chain
add rule reject-chain meta l4proto tcp reject with tcp reset
add rule reject-chain reject with icmp port-unreachable
add chain masquerading
flush chain masquerading
add rule masquerading ct status dnat ct original ip daddr @cluster-ips ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x4000
add rule masquerading meta mark & 0x4000 == 0 return
add rule masquerading meta mark set meta mark ^ 0x4000
add rule masquerading masquerade fully-random
add chain filter-input { type filter hook input priority -110 }
flush chain filter-input
add rule filter-input ct state new jump endpoints-check
add rule filter-input ip daddr 127.0.0.0/8 iifname != "lo" ct status & dnat == 0 drop
add chain filter-forward { type filter hook forward priority -110 }
flush chain filter-forward
add rule filter-forward ct state new jump endpoints-check
add rule filter-forward ct state new ct status dnat ct original ip daddr @cluster-ips fib daddr . iif oif exists meta mark set meta mark | 0x4000
add chain filter-output { type filter hook output priority -110 }
flush chain filter-output
add rule filter-output ct state new jump endpoints-check
add chain nat-prerouting { type nat hook prerouting priority -100 }
flush chain nat-prerouting
add rule nat-prerouting jump services
add chain nat-output { type nat hook output priority -100 }
flush chain nat-output
add rule nat-output jump services
add chain nat-postrouting { type nat hook postrouting priority 100 }
flush chain nat-postrouting
add rule nat-postrouting jump masquerading
add map eps_default_web_http_tcp { type integer : ipv4_addr . inet_service }
add chain svc_default_web_http_tcp
add rule svc_default_web_http_tcp dnat to numgen random mod 2 map @eps_default_web_http_tcp
add element service-ips { 10.96.0.10 . tcp . 80 : goto svc_default_web_http_tcp }
add element eps_default_web_http_tcp { 0 : 10.244.1.2 . 8080, 1 : 10.244.2.3 . 8080 }
add element cluster-ips { 10.96.0.10 }
`
	assert.Equal(t, want, got)
}

// TestPlanIncremental: after a full sync, each change rewrites only what
// it affects.
func TestPlanIncremental(t *testing.T) {
	web := types.NamespacedName{Namespace: "default", Name: "web"}
	db := types.NamespacedName{Namespace: "default", Name: "db"}
	sticky := func(p *servicePort) *servicePort { p.affinity = 3 * time.Hour; return p }
	dropping := func(p *servicePort) *servicePort { p.drop = true; return p }
	initial := map[types.NamespacedName][]*servicePort{
		web: {tcpPort("default", "web", "http", "10.96.0.10", 80, "10.244.1.2:8080", "10.244.2.3:8080")},
		db:  {tcpPort("default", "db", "", "10.96.0.20", 5432, "10.244.1.9:5432")},
	}
	for _, tc := range []struct {
		name   string
		change map[types.NamespacedName][]*servicePort
		want   string
	}{{
		name:   "unchanged",
		change: map[types.NamespacedName][]*servicePort{web: initial[web]},
		want:   "",
	}, {
		name: "endpoint added",
		change: map[types.NamespacedName][]*servicePort{
			web: {tcpPort("default", "web", "http", "10.96.0.10", 80, "10.244.1.2:8080", "10.244.2.3:8080", "10.244.3.4:8080")},
		},
		want: `flush chain svc_default_web_http_tcp
add rule svc_default_web_http_tcp dnat to numgen random mod 3 map @eps_default_web_http_tcp
add element eps_default_web_http_tcp { 2 : 10.244.3.4 . 8080 }
`,
	}, {
		name: "endpoint replaced: elements only",
		change: map[types.NamespacedName][]*servicePort{
			web: {tcpPort("default", "web", "http", "10.96.0.10", 80, "10.244.1.2:8080", "10.244.2.9:8080")},
		},
		want: `delete element eps_default_web_http_tcp { 1 }
add element eps_default_web_http_tcp { 1 : 10.244.2.9 . 8080 }
`,
	}, {
		name: "down to one endpoint",
		change: map[types.NamespacedName][]*servicePort{
			web: {tcpPort("default", "web", "http", "10.96.0.10", 80, "10.244.2.3:8080")},
		},
		want: `flush chain svc_default_web_http_tcp
add rule svc_default_web_http_tcp dnat to 10.244.2.3:8080
`,
	}, {
		name:   "no endpoints left",
		change: map[types.NamespacedName][]*servicePort{db: {tcpPort("default", "db", "", "10.96.0.20", 5432)}},
		want: `delete element service-ips { 10.96.0.20 . tcp . 5432 }
add element no-endpoint-services { 10.96.0.20 . tcp . 5432 : goto reject-chain }
flush chain svc_default_db__tcp
`,
	}, {
		name:   "no local endpoints",
		change: map[types.NamespacedName][]*servicePort{db: {dropping(tcpPort("default", "db", "", "10.96.0.20", 5432))}},
		want: `delete element service-ips { 10.96.0.20 . tcp . 5432 }
add element no-endpoint-services { 10.96.0.20 . tcp . 5432 : drop }
flush chain svc_default_db__tcp
`,
	}, {
		name:   "service deleted",
		change: map[types.NamespacedName][]*servicePort{db: nil},
		want: `delete element service-ips { 10.96.0.20 . tcp . 5432 }
delete element cluster-ips { 10.96.0.20 }
flush chain svc_default_db__tcp
`,
	}, {
		name:   "cluster IP changed",
		change: map[types.NamespacedName][]*servicePort{db: {tcpPort("default", "db", "", "10.96.0.21", 5432, "10.244.1.9:5432")}},
		want: `delete element service-ips { 10.96.0.20 . tcp . 5432 }
delete element cluster-ips { 10.96.0.20 }
add element service-ips { 10.96.0.21 . tcp . 5432 : goto svc_default_db__tcp }
add element cluster-ips { 10.96.0.21 }
`,
	}, {
		name: "second port on the same cluster IP",
		change: map[types.NamespacedName][]*servicePort{db: {
			tcpPort("default", "db", "", "10.96.0.20", 5432, "10.244.1.9:5432"),
			tcpPort("default", "db", "admin", "10.96.0.20", 9000, "10.244.1.9:9000"),
		}},
		want: `add chain svc_default_db_admin_tcp
add rule svc_default_db_admin_tcp dnat to 10.244.1.9:9000
add element service-ips { 10.96.0.20 . tcp . 9000 : goto svc_default_db_admin_tcp }
`,
	}, {
		name:   "session affinity",
		change: map[types.NamespacedName][]*servicePort{db: {sticky(tcpPort("default", "db", "", "10.96.0.20", 5432, "10.244.1.9:5432"))}},
		want: `add map eps_default_db__tcp { type integer : ipv4_addr . inet_service }
add map aff_default_db__tcp_10800 { type ipv4_addr : ipv4_addr . inet_service; flags dynamic,timeout; timeout 3h0m0s }
flush chain svc_default_db__tcp
add rule svc_default_db__tcp dnat to ip saddr map @aff_default_db__tcp_10800 if 1 . that in @affinity-endpoints refresh timeout 3h0m0s
add rule svc_default_db__tcp dnat to numgen random mod 1 map @eps_default_db__tcp remember ip saddr in @aff_default_db__tcp_10800 timeout 3h0m0s
add element affinity-endpoints { 1 . 10.244.1.9 . 5432 }
add element eps_default_db__tcp { 0 : 10.244.1.9 . 5432 }
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestProxier(t)
			step(p, true, initial)
			got := step(p, false, tc.change)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestPlanStaleObjects: emptied chains and affinity maps are queued for
// deletion after the transaction.
func TestPlanStaleObjects(t *testing.T) {
	p := newTestProxier(t)
	db := types.NamespacedName{Namespace: "default", Name: "db"}
	s := tcpPort("default", "db", "", "10.96.0.20", 5432, "10.244.1.9:5432")
	s.affinity = time.Minute
	step(p, true, map[types.NamespacedName][]*servicePort{db: {s}})
	_, ph, _, _ := p.plan([]types.NamespacedName{db}, map[types.NamespacedName][]*servicePort{db: nil}, nil)
	assert.Equal(t, []string{"svc_default_db__tcp"}, ph.staleChains)
	assert.Equal(t, []string{"eps_default_db__tcp", "aff_default_db__tcp_60"}, ph.staleSets)
}

// TestPlanUDPConntrackCleanups: UDP flows to removed endpoints, and all
// flows of a UDP port that just got endpoints, are forgotten.
func TestPlanUDPConntrackCleanups(t *testing.T) {
	udp := func(eps ...string) *servicePort {
		p := tcpPort("default", "dns", "dns", "10.96.0.10", 53, eps...)
		p.proto, p.name.Protocol = unix.IPPROTO_UDP, "UDP"
		return p
	}
	vip := netip.MustParseAddr("10.96.0.10")
	assert.Equal(t, []flowCleanup{{clusterIP: vip, port: 53, endpoint: netip.MustParseAddrPort("10.244.1.2:53")}},
		udpCleanups(udp("10.244.1.2:53", "10.244.1.3:53"), udp("10.244.1.3:53")))
	assert.Equal(t, []flowCleanup{{clusterIP: vip, port: 53}}, udpCleanups(udp(), udp("10.244.1.3:53")))
	assert.Equal(t, []flowCleanup{{clusterIP: vip, port: 53}}, udpCleanups(nil, udp("10.244.1.3:53")))
	assert.Empty(t, udpCleanups(udp("10.244.1.3:53"), udp("10.244.1.3:53", "10.244.1.4:53")))
	assert.Empty(t, udpCleanups(tcpPort("default", "web", "", "10.96.0.11", 80, "10.244.1.2:80"), nil), "TCP needs none")
}

func newFakeClient() *fake.Clientset { return fake.NewClientset() }
