package cni

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hostPod(name string, mut func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}}
	if mut != nil {
		mut(&p.Spec)
	}
	return p
}

func TestPodHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name       string
		pod        *corev1.Pod
		wantHost   string
		wantDomain string
		wantErr    bool
	}{
		{name: "pod name", pod: hostPod("web-0", nil), wantHost: "web-0"},
		{name: "spec.hostname wins", pod: hostPod("web-0", func(s *corev1.PodSpec) { s.Hostname = "db" }), wantHost: "db"},
		{name: "subdomain", pod: hostPod("web-0", func(s *corev1.PodSpec) { s.Subdomain = "web" }), wantHost: "web-0", wantDomain: "web.team.svc.cluster.local"},
		{name: "long name cut to 63 without trailing dash", pod: hostPod(long, nil), wantHost: strings.Repeat("a", 62)},
		{name: "invalid hostname", pod: hostPod("web-0", func(s *corev1.PodSpec) { s.Hostname = "Not_Valid" }), wantErr: true},
		{name: "invalid subdomain", pod: hostPod("web-0", func(s *corev1.PodSpec) { s.Subdomain = "a.b" }), wantErr: true},
		{name: "hostnameOverride wins and has no domain", pod: hostPod("web-0", func(s *corev1.PodSpec) {
			s.HostnameOverride = ptr("custom.host")
			s.Subdomain = "web"
		}), wantHost: "custom.host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d, err := PodHostname(tc.pod, "cluster.local")
			if tc.wantErr {
				assert.ErrorIs(t, err, ErrInvalidHostname)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantHost, h)
			assert.Equal(t, tc.wantDomain, d)
		})
	}
}

func TestKernelHostnameAndHostnameFile(t *testing.T) {
	fqdnPod := hostPod("web-0", func(s *corev1.PodSpec) {
		s.Subdomain = "web"
		s.SetHostnameAsFQDN = ptr(true)
	})
	h, err := KernelHostname(fqdnPod, "cluster.local")
	require.NoError(t, err)
	assert.Equal(t, "web-0.web.team.svc.cluster.local", h)

	b, err := HostnameFile(fqdnPod, "cluster.local", "node-1")
	require.NoError(t, err)
	assert.Equal(t, "web-0.web.team.svc.cluster.local\n", string(b))

	noDomain := hostPod("web-0", func(s *corev1.PodSpec) { s.SetHostnameAsFQDN = ptr(true) })
	h, err = KernelHostname(noDomain, "cluster.local")
	require.NoError(t, err)
	assert.Equal(t, "web-0", h, "no subdomain: no FQDN")

	tooLong := hostPod(strings.Repeat("a", 40), func(s *corev1.PodSpec) {
		s.Subdomain = "web"
		s.SetHostnameAsFQDN = ptr(true)
	})
	_, err = KernelHostname(tooLong, "cluster.local")
	assert.ErrorIs(t, err, ErrInvalidHostname)

	hostNet := hostPod("web-0", func(s *corev1.PodSpec) { s.HostNetwork = true })
	b, err = HostnameFile(hostNet, "cluster.local", "node-1")
	require.NoError(t, err)
	assert.Equal(t, "node-1\n", string(b))
}

const localhostBlock = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestHostsFile(t *testing.T) {
	ips := []netip.Addr{netip.MustParseAddr("10.244.1.5"), netip.MustParseAddr("fd00::5")}
	aliases := []corev1.HostAlias{
		{IP: "127.0.0.1", Hostnames: []string{"foo.local", "bar.local"}},
		{IP: "10.1.2.3", Hostnames: []string{"foo.remote"}},
	}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		ips   []netip.Addr
		nodes string
		want  string
	}{
		{
			name: "pod IPs and hostname",
			pod:  hostPod("web-0", nil),
			ips:  ips,
			want: localhostBlock + "10.244.1.5\tweb-0\nfd00::5\tweb-0\n",
		},
		{
			name: "FQDN with subdomain",
			pod:  hostPod("web-0", func(s *corev1.PodSpec) { s.Subdomain = "web" }),
			ips:  ips[:1],
			want: localhostBlock + "10.244.1.5\tweb-0.web.team.svc.cluster.local\tweb-0\n",
		},
		{
			name: "hostAliases appended",
			pod:  hostPod("web-0", func(s *corev1.PodSpec) { s.HostAliases = aliases }),
			ips:  ips[:1],
			want: localhostBlock + "10.244.1.5\tweb-0\n" +
				"\n# Entries added by HostAliases.\n127.0.0.1\tfoo.local\tbar.local\n10.1.2.3\tfoo.remote\n",
		},
		{
			name:  "host network copies the node's file",
			pod:   hostPod("web-0", func(s *corev1.PodSpec) { s.HostNetwork = true; s.HostAliases = aliases[1:] }),
			nodes: "127.0.0.1 localhost\n192.0.2.2 node-1\n",
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.0.2.2 node-1\n" +
				"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostsFile(tc.pod, tc.ips, "cluster.local", []byte(tc.nodes))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := HostsFile(hostPod("web-0", func(s *corev1.PodSpec) { s.Hostname = "Bad_" }), ips, "cluster.local", nil)
	assert.ErrorIs(t, err, ErrInvalidHostname)
}
