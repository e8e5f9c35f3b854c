package cni

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func dnsPod(policy corev1.DNSPolicy, hostNet bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "team"},
		Spec:       corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: cfg},
	}
}

var hostResolv = &ResolvConfig{
	Nameservers: []string{"192.0.2.53", "192.0.2.54"},
	Searches:    []string{"corp.example", "example"},
	Options:     []string{"timeout:2", "rotate"},
}

var clusterNode = NodeDNS{
	ClusterDNS:    []netip.Addr{netip.MustParseAddr("10.96.0.10")},
	ClusterDomain: "cluster.local",
	Host:          hostResolv,
}

func TestPodDNS(t *testing.T) {
	clusterSearch := []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		node     NodeDNS
		want     ResolvConfig
		warnings int
	}{
		{
			name: "ClusterFirst: cluster DNS, cluster then host searches, ndots:5",
			pod:  dnsPod(corev1.DNSClusterFirst, false, nil),
			node: clusterNode,
			want: ResolvConfig{Nameservers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		{
			name: "empty policy is ClusterFirst",
			pod:  dnsPod("", false, nil),
			node: clusterNode,
			want: ResolvConfig{Nameservers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		{
			name: "ClusterFirst on the host network behaves as Default",
			pod:  dnsPod(corev1.DNSClusterFirst, true, nil),
			node: clusterNode,
			want: *hostResolv,
		},
		{
			name: "ClusterFirstWithHostNet on the host network uses cluster DNS",
			pod:  dnsPod(corev1.DNSClusterFirstWithHostNet, true, nil),
			node: clusterNode,
			want: ResolvConfig{Nameservers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		{
			name: "Default copies the host's resolver",
			pod:  dnsPod(corev1.DNSDefault, false, nil),
			node: clusterNode,
			want: *hostResolv,
		},
		{
			name:     "ClusterFirst without cluster DNS falls back to Default",
			pod:      dnsPod(corev1.DNSClusterFirst, false, nil),
			node:     NodeDNS{ClusterDomain: "cluster.local", Host: hostResolv},
			want:     *hostResolv,
			warnings: 1,
		},
		{
			name: "Default without a host resolver uses the node itself",
			pod:  dnsPod(corev1.DNSDefault, false, nil),
			node: NodeDNS{NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::2")}},
			want: ResolvConfig{Nameservers: []string{"127.0.0.1", "::1"}, Searches: []string{"."}},
		},
		{
			name: "no cluster domain: host searches only",
			pod:  dnsPod(corev1.DNSClusterFirst, false, nil),
			node: NodeDNS{ClusterDNS: clusterNode.ClusterDNS, Host: hostResolv},
			want: ResolvConfig{Nameservers: []string{"10.96.0.10"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:5"}},
		},
		{
			name: "None uses only dnsConfig",
			pod: dnsPod(corev1.DNSNone, false, &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1"},
				Searches:    []string{"a.example", "a.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}},
			}),
			node: clusterNode,
			want: ResolvConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		{
			name: "None without dnsConfig is empty",
			pod:  dnsPod(corev1.DNSNone, false, nil),
			node: clusterNode,
			want: ResolvConfig{},
		},
		{
			name: "ClusterFirst merges dnsConfig: appended, deduplicated, pod options win",
			pod: dnsPod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
				Nameservers: []string{"10.96.0.10", "1.1.1.1"},
				Searches:    []string{"svc.cluster.local", "extra.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "single-request-reopen"}},
			}),
			node: clusterNode,
			want: ResolvConfig{
				Nameservers: []string{"10.96.0.10", "1.1.1.1"},
				Searches:    append(append([]string{}, clusterSearch...), "extra.example"),
				Options:     []string{"ndots:1", "single-request-reopen"},
			},
		},
		{
			name: "Default merges dnsConfig into host options",
			pod: dnsPod(corev1.DNSDefault, false, &corev1.PodDNSConfig{
				Options: []corev1.PodDNSConfigOption{{Name: "timeout", Value: ptr("5")}},
			}),
			node: clusterNode,
			want: ResolvConfig{Nameservers: hostResolv.Nameservers, Searches: hostResolv.Searches, Options: []string{"timeout:5", "rotate"}},
		},
		{
			name: "more than three nameservers are cut",
			pod: dnsPod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9"},
			}),
			node:     clusterNode,
			want:     ResolvConfig{Nameservers: []string{"10.96.0.10", "1.1.1.1", "8.8.8.8"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
			warnings: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := PodDNS(tc.pod, tc.node)
			require.NoError(t, err)
			assert.Equal(t, tc.want.Nameservers, nilIfEmpty(got.Nameservers), "nameservers")
			assert.Equal(t, tc.want.Searches, nilIfEmpty(got.Searches), "searches")
			assert.Equal(t, tc.want.Options, nilIfEmpty(got.Options), "options")
			assert.Len(t, warnings, tc.warnings, "%v", warnings)
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestPodDNSDoesNotAliasTheHostConfig(t *testing.T) {
	host := &ResolvConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"a"}, Options: []string{"x"}}
	_, _, err := PodDNS(dnsPod(corev1.DNSDefault, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"b"}}), NodeDNS{Host: host})
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53"}, host.Nameservers)
	assert.Equal(t, []string{"a"}, host.Searches)
}

func TestPodDNSSearchLimits(t *testing.T) {
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("d%d.example", i))
	}
	got, warnings, err := PodDNS(dnsPod(corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: many}), NodeDNS{})
	require.NoError(t, err)
	assert.Len(t, got.Searches, MaxDNSSearchPaths)
	require.Len(t, warnings, 1)
	assert.True(t, strings.HasPrefix(warnings[0], "Search Line limits were exceeded"))

	long := strings.Repeat("a", 254)
	got, warnings, err = PodDNS(dnsPod(corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: []string{"ok.example", long}}), NodeDNS{})
	require.NoError(t, err)
	assert.Equal(t, []string{"ok.example"}, got.Searches, "domains over 253 characters are dropped")
	assert.Len(t, warnings, 1)

	var wide []string
	for i := range 20 {
		wide = append(wide, fmt.Sprintf("%03d.%s", i, strings.Repeat("x", 200)))
	}
	got, _, err = PodDNS(dnsPod(corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: wide}), NodeDNS{})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(strings.Join(got.Searches, " ")), MaxDNSSearchListChars)
	assert.Equal(t, wide[:len(got.Searches)], got.Searches, "trimmed from the end")
	assert.Len(t, got.Searches, 9)
}

func TestPodDNSRejectsUnknownPolicy(t *testing.T) {
	_, _, err := PodDNS(dnsPod("Bogus", false, nil), clusterNode)
	assert.Error(t, err)
}

func TestParseResolvConf(t *testing.T) {
	in := `# generated
nameserver 192.0.2.53
search old.example
options ndots:1
nameserver 192.0.2.54
search corp.example. example
options timeout:2 rotate
; comment
domain ignored.example
`
	got, err := ParseResolvConf(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53", "192.0.2.54"}, got.Nameservers, "nameservers accumulate")
	assert.Equal(t, []string{"corp.example", "example"}, got.Searches, "last search wins, trailing dot dropped")
	assert.Equal(t, []string{"timeout:2", "rotate"}, got.Options, "last options win")

	_, err = ParseResolvConf(strings.NewReader("nameserver\n"))
	assert.Error(t, err)
}

func TestResolvConfBytes(t *testing.T) {
	b, warnings, err := ResolvConf(dnsPod(corev1.DNSClusterFirst, false, nil), clusterNode)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, "search team.svc.cluster.local svc.cluster.local cluster.local corp.example example\nnameserver 10.96.0.10\noptions ndots:5\n", string(b))
	assert.Equal(t, "", string(ResolvConfig{}.Bytes()))
	round, err := ParseResolvConf(strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Equal(t, []string{"10.96.0.10"}, round.Nameservers)
}
