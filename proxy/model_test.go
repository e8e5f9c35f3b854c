package proxy

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type testEP struct {
	ip                          string
	ready, serving, terminating *bool
	node                        string
}

func testSlice(addrType discoveryv1.AddressType, portName string, port int32, proto corev1.Protocol, eps ...testEP) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
		AddressType: addrType,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}
	for _, e := range eps {
		ep := discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminating},
		}
		if e.node != "" {
			ep.NodeName = ptr.To(e.node)
		}
		s.Endpoints = append(s.Endpoints, ep)
	}
	return s
}

func testService(mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func TestSelectEndpoints(t *testing.T) {
	yes, no := ptr.To(true), ptr.To(false)
	v4 := discoveryv1.AddressTypeIPv4
	for _, tc := range []struct {
		name     string
		local    bool
		slices   []*discoveryv1.EndpointSlice
		want     []string
		wantDrop bool
	}{{
		name:   "ready only",
		slices: []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.2", ready: yes}, testEP{ip: "10.0.0.1", ready: no}, testEP{ip: "10.0.0.3", ready: yes})},
		want:   []string{"10.0.0.2:8080", "10.0.0.3:8080"},
	}, {
		name:   "nil conditions mean ready",
		slices: []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.1"})},
		want:   []string{"10.0.0.1:8080"},
	}, {
		name: "serving terminating endpoints only when none is ready",
		slices: []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP,
			testEP{ip: "10.0.0.1", ready: no, serving: yes, terminating: yes},
			testEP{ip: "10.0.0.2", ready: no, serving: no, terminating: yes})},
		want: []string{"10.0.0.1:8080"},
	}, {
		name: "ready wins over terminating",
		slices: []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP,
			testEP{ip: "10.0.0.1", ready: no, serving: yes, terminating: yes},
			testEP{ip: "10.0.0.2", ready: yes})},
		want: []string{"10.0.0.2:8080"},
	}, {
		name: "ports by name and protocol, per slice, deduplicated",
		slices: []*discoveryv1.EndpointSlice{
			testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.1"}),
			testSlice(v4, "http", 9090, corev1.ProtocolTCP, testEP{ip: "10.0.0.2"}),
			testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.1"}),
			testSlice(v4, "other", 7070, corev1.ProtocolTCP, testEP{ip: "10.0.0.3"}),
			testSlice(v4, "http", 6060, corev1.ProtocolUDP, testEP{ip: "10.0.0.4"}),
		},
		want: []string{"10.0.0.1:8080", "10.0.0.2:9090"},
	}, {
		name:   "IPv6 and FQDN slices are ignored",
		slices: []*discoveryv1.EndpointSlice{testSlice(discoveryv1.AddressTypeIPv6, "http", 8080, corev1.ProtocolTCP, testEP{ip: "fd00::1"}), testSlice(discoveryv1.AddressTypeFQDN, "http", 8080, corev1.ProtocolTCP, testEP{ip: "a.example"})},
	}, {
		name:   "local policy keeps this node's endpoints",
		local:  true,
		slices: []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.1", node: "n1"}, testEP{ip: "10.0.0.2", node: "n2"})},
		want:   []string{"10.0.0.1:8080"},
	}, {
		name:     "local policy without local endpoints drops",
		local:    true,
		slices:   []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.2", node: "n2"})},
		wantDrop: true,
	}, {
		name:   "no endpoints anywhere rejects",
		local:  true,
		slices: []*discoveryv1.EndpointSlice{testSlice(v4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.2", node: "n2", ready: no})},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, drop := selectEndpoints(corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, tc.slices, "n1", tc.local)
			var gotS []string
			for _, g := range got {
				gotS = append(gotS, g.String())
			}
			assert.Equal(t, tc.want, gotS)
			assert.Equal(t, tc.wantDrop, drop)
		})
	}
}

func TestBuildService(t *testing.T) {
	eps := []*discoveryv1.EndpointSlice{testSlice(discoveryv1.AddressTypeIPv4, "http", 8080, corev1.ProtocolTCP, testEP{ip: "10.0.0.1"})}
	t.Run("ports", func(t *testing.T) {
		ps := buildService(testService(func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports,
				corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				corev1.ServicePort{Name: "sctp", Port: 9, Protocol: corev1.ProtocolSCTP})
		}), eps, "n1")
		assert.Len(t, ps, 3)
		assert.Equal(t, "svc_ns_svc_http_tcp", ps[0].name.chainName())
		assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:8080")}, ps[0].endpoints)
		assert.Equal(t, netip.MustParseAddr("10.96.0.5"), ps[0].clusterIP)
		assert.Equal(t, "svc_ns_svc_dns_udp", ps[1].name.chainName())
		assert.Empty(t, ps[1].endpoints, "no slice port named dns")
		assert.Equal(t, uint8(132), ps[2].proto)
	})
	for _, tc := range []struct {
		name string
		mut  func(*corev1.Service)
	}{
		{"headless", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
		}},
		{"ExternalName", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }},
		{"IPv6 only", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "fd00::5", []string{"fd00::5"} }},
		{"another proxy's", func(s *corev1.Service) { s.Labels = map[string]string{labelProxyName: "other"} }},
	} {
		t.Run(tc.name+" is skipped", func(t *testing.T) {
			assert.Empty(t, buildService(testService(tc.mut), eps, "n1"))
		})
	}
	t.Run("dual-stack uses the IPv4 address", func(t *testing.T) {
		ps := buildService(testService(func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "fd00::5", []string{"fd00::5", "10.96.0.7"}
		}), eps, "n1")
		assert.Equal(t, netip.MustParseAddr("10.96.0.7"), ps[0].clusterIP)
	})
	t.Run("session affinity timeout", func(t *testing.T) {
		ps := buildService(testService(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }), eps, "n1")
		assert.Equal(t, 3*time.Hour, ps[0].affinity)
		ps = buildService(testService(func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
		}), eps, "n1")
		assert.Equal(t, time.Minute, ps[0].affinity)
		assert.Equal(t, "aff_ns_svc_http_tcp_60", ps[0].name.affinityName(ps[0].affinity))
	})
}

func TestConfigValidation(t *testing.T) {
	ok := func() Config { return Config{Client: newFakeClient(), NodeName: "n1"} }
	for _, tc := range []struct {
		name string
		mut  func(*Config)
	}{
		{"no client", func(c *Config) { c.Client = nil }},
		{"no node name", func(c *Config) { c.NodeName = "" }},
		{"bad table name", func(c *Config) { c.Table = "a b" }},
		{"IPv6 cluster CIDR", func(c *Config) { c.ClusterCIDR = netip.MustParsePrefix("fd00::/64") }},
		{"missing netns", func(c *Config) { c.NetNS = "/nonexistent/ns" }},
		{"negative MinSyncPeriod", func(c *Config) { c.MinSyncPeriod = -time.Second }},
		{"negative SyncPeriod", func(c *Config) { c.SyncPeriod = -time.Second }},
		{"mark of two bits", func(c *Config) { c.MasqueradeMark = 0x6000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.mut(&c)
			_, err := New(c)
			assert.ErrorIs(t, err, ErrConfig)
		})
	}
	p, err := New(ok())
	assert.NoError(t, err)
	assert.Equal(t, DefaultTable, p.cfg.Table)
	assert.Equal(t, DefaultSyncPeriod, p.cfg.SyncPeriod)
	assert.Equal(t, DefaultMasqueradeMark, p.cfg.MasqueradeMark)
}
