package podkit

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestServicesEndToEnd drives Services through real pods on a one-node
// podkit.Cluster (real kubelet, native runtime, bridge, nftables proxy,
// node-local cluster DNS): names resolve through the pods' resolv.conf,
// traffic reaches every ready backend, readiness failure and deletion take
// a backend out, a backend reaches itself through its Service (hairpin),
// a headless Service resolves to the pod IPs with SRV records for named
// ports, other names go to the upstream the test runs on 127.0.0.1, the
// `kubernetes` Service reaches the API server, and shutdown leaves no
// nftables table, route, link, namespace, mount, cgroup or process.
func TestServicesEndToEnd(t *testing.T) {
	upstream := upstreamDNS(t, "upstream.example.", netip.MustParseAddr("192.0.2.77"))
	e := newSvcEnv(t, upstream, nil)
	ctx := context.Background()

	// The service range is routed locally before anything sends to it.
	first := e.svcCIDR.Addr().Next()
	out, err := exec.Command("ip", "route", "get", first.String()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^local `+first.String()+` dev lo `, string(out), "service range routed locally")
	assert.NotContains(t, string(out), " via ", "never the default route")
	rs, err := netlink.RouteGet(first.AsSlice())
	require.NoError(t, err)
	assert.Equal(t, 1, rs[0].LinkIndex, "dev lo")

	image := e.c.Image(svcImage)
	require.NotEmpty(t, image)
	web := map[string]string{"app": "web"}
	e.createPods(backend("web-0", image, web), backend("web-1", image, web), backend("web-2", image, web),
		backend("client", image, map[string]string{"app": "client"}))
	_, err = e.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: web, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-headless", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: web, Ports: []corev1.ServicePort{
			{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := e.waitReady("web-0", "web-1", "web-2", "client")
	svc, err := e.client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, e.svcCIDR.Contains(netip.MustParseAddr(svc.Spec.ClusterIP)))
	dnsSvc, err := e.client.CoreV1().Services("kube-system").Get(ctx, DNSServiceName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, DNSAddr(e.svcCIDR).String(), dnsSvc.Spec.ClusterIP)

	const url = "http://web.default.svc.cluster.local"
	all := map[string]bool{"web-0": true, "web-1": true, "web-2": true}
	seen := func(m map[string]int) map[string]bool {
		out := map[string]bool{}
		for k := range m {
			out[k] = true
		}
		return out
	}
	t.Run("every ready backend through the service name", func(t *testing.T) {
		var got map[string]int
		// The first request may race the proxy's first sync of the
		// endpoints: wait for every backend, then check a clean run.
		require.Eventually(t, func() bool { got = e.hits("client", url, 30); return assert.ObjectsAreEqual(all, seen(got)) },
			time.Minute, 100*time.Millisecond, "backends seen: %v", got)
		got = e.hits("client", url, 60)
		assert.Equal(t, all, seen(got), "60 requests through %s reach every ready backend", url)
		// The short name, through the search path.
		assert.Equal(t, all, seen(e.hits("client", "http://web", 30)))
	})

	t.Run("from the host", func(t *testing.T) {
		body, err := hostGet("http://" + svc.Spec.ClusterIP)
		require.NoError(t, err)
		assert.Regexp(t, `^host web-\d$`, body)
	})

	t.Run("headless service and SRV", func(t *testing.T) {
		var want []string
		for _, n := range []string{"web-0", "web-1", "web-2"} {
			want = append(want, pods[n].Status.PodIP)
		}
		sort.Strings(want)
		out, err := e.exec("client", "lookup", "web-headless.default.svc.cluster.local")
		require.NoError(t, err)
		assert.Equal(t, want, strings.Fields(out), "one A record per ready pod")
		out, err = e.exec("client", "srv", "http", "tcp", "web-headless.default.svc.cluster.local")
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		assert.Len(t, lines, 3, "one SRV record per ready endpoint: %s", out)
		for _, l := range lines {
			assert.Regexp(t, `^\d+-\d+-\d+-\d+\.web-headless\.default\.svc\.cluster\.local\. 8080$`, l)
		}
		out, err = e.exec("client", "srv", "http", "tcp", "web.default.svc.cluster.local")
		require.NoError(t, err)
		assert.Equal(t, "web.default.svc.cluster.local. 80", strings.TrimSpace(out), "ClusterIP service: SRV of the named port")
	})

	t.Run("upstream and kubernetes service", func(t *testing.T) {
		out, err := e.exec("client", "lookup", "upstream.example")
		require.NoError(t, err)
		assert.Equal(t, "192.0.2.77", strings.TrimSpace(out), "forwarded to the test's upstream on 127.0.0.1")
		out, err = e.exec("client", "tcp", "kubernetes.default.svc.cluster.local:443")
		require.NoError(t, err)
		assert.Equal(t, "connected "+net.JoinHostPort(e.svcCIDR.Addr().Next().String(), "443"), strings.TrimSpace(out))
	})

	t.Run("readiness failure takes a backend out", func(t *testing.T) {
		_, err := e.exec("web-1", "unready")
		require.NoError(t, err)
		start := time.Now()
		require.Eventually(t, func() bool {
			p, err := e.client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
			return err == nil && !podReady(p)
		}, time.Minute, 20*time.Millisecond, "web-1 turns unready")
		notReady := time.Since(start)
		// Within one probe period plus the proxy's sync: poll until the
		// backend is out, then check a long run never reaches it.
		require.Eventually(t, func() bool { return e.hits("client", url, 10)["web-1"] == 0 }, 30*time.Second, 20*time.Millisecond)
		t.Logf("unready in the API %v after the probe started failing; out of the service %v after", notReady.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		got := e.hits("client", url, 60)
		assert.Equal(t, map[string]bool{"web-0": true, "web-2": true}, seen(got), "only ready backends: %v", got)
		_, err = e.exec("web-1", "ready")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return e.hits("client", url, 30)["web-1"] > 0 }, time.Minute, 100*time.Millisecond, "web-1 back")
	})

	t.Run("deleting a backend removes it", func(t *testing.T) {
		require.NoError(t, e.client.CoreV1().Pods("default").Delete(ctx, "web-2", metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			_, err := e.client.CoreV1().Pods("default").Get(ctx, "web-2", metav1.GetOptions{})
			return err != nil
		}, time.Minute, 50*time.Millisecond, "web-2 deleted")
		got := e.hits("client", url, 60)
		assert.Equal(t, map[string]bool{"web-0": true, "web-1": true}, seen(got), "deleted backend gone: %v", got)
		out, err := e.exec("client", "lookup", "web-headless.default.svc.cluster.local")
		require.NoError(t, err)
		assert.Len(t, strings.Fields(out), 2, "headless records follow: %s", out)
	})

	t.Run("hairpin", func(t *testing.T) {
		_, err := e.exec("web-1", "unready")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return e.hits("client", url, 10)["web-1"] == 0 }, time.Minute, 50*time.Millisecond)
		// web-0 is now the only ready backend: its requests to its own
		// Service come back to itself.
		got := e.hits("web-0", url, 20)
		assert.Equal(t, map[string]int{"web-0": 20}, got, "a backend reaches itself through its service")
	})

	e.stop()
	e.assertClean()
	out, err = exec.Command("ip", "route", "get", first.String()).CombinedOutput()
	assert.NotContains(t, string(out), "dev lo", "service route removed: %s", out)
}
