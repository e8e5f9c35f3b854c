package podkit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	mdns "github.com/miekg/dns"
	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
)

// svcImage is the reference of the svcbox image in a test cluster.
const svcImage = "test/svcbox:1"

// svcEnv is a one-node podkit.Cluster in this process, on the host's
// network namespace with test-unique names and ranges: the pod range
// 10.2xx.0.0/16 and the service range 10.1xx.0.0/16 (so a cluster running
// next to it on the default ranges is not disturbed), a DNS upstream on
// 127.0.0.1, and the svcbox image.
type svcEnv struct {
	t        testing.TB
	c        *Cluster
	client   kubernetes.Interface
	node     *Node
	nodeName string
	podCIDR  netip.Prefix
	svcCIDR  netip.Prefix
	runDir   string
	dataDir  string
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

var buildSvcbox = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "podkit-svcbox-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "svcbox")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/svcbox")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building svcbox: %w\n%s", err, out)
	}
	return bin, nil
})

// upstreamDNS serves name → ip on 127.0.0.1 (UDP and TCP) for the test.
func upstreamDNS(t testing.TB, name string, ip netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		if q := r.Question[0]; strings.EqualFold(q.Name, mdns.Fqdn(name)) && q.Qtype == mdns.TypeA {
			m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 5}, A: ip.AsSlice()})
		} else {
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	srv := &mdns.Server{PacketConn: pc, Handler: h}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func newSvcEnv(t testing.TB, upstream string, tweak func(*NodeConfig)) *svcEnv {
	t.Helper()
	testutil.RequireRoot(t)
	bin, err := buildSvcbox()
	require.NoError(t, err)
	b := cnitest.RandomByte()
	e := &svcEnv{t: t,
		podCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200 + b%20, 0, 0}), 16),
		svcCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 120 + b%40, 0, 0}), 16),
	}
	prefix := "svc-" + cnitest.RandomHex(3)
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() && os.Getenv("PODKIT_TEST_LOG") != "" {
		log = slog.Default()
	}
	dataDir := t.TempDir()
	logDir := t.TempDir()
	cfg := ClusterConfig{
		DataDir: dataDir, Nodes: 1, NodePrefix: prefix, Port: -1, Store: app.StoreMemory,
		ClusterCIDR: e.podCIDR, ServiceCIDR: e.svcCIDR, DNSUpstreams: []string{upstream},
		DemoImages: map[string]string{svcImage: bin}, ShutdownGrace: 2 * time.Second, Logger: log,
		Node: func(i int, nc *NodeConfig) {
			nc.LogDir = logDir
			if tweak != nil {
				tweak(nc)
			}
		},
	}
	ctx := context.Background()
	c, err := NewCluster(ctx, cfg)
	require.NoError(t, err)
	e.c, e.client, e.node, e.nodeName = c, c.Client(), c.Nodes()[0], c.NodeName(1)
	e.runDir, e.dataDir = e.node.cfg.RunDir, dataDir
	rctx, cancel := context.WithCancel(ctx)
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- c.Run(rctx) }()
	t.Cleanup(func() { e.stop() })
	require.NoError(t, WaitNodesReady(ctx, e.client, 1, 2*time.Minute))
	return e
}

// stop deletes the pods, stops the cluster and removes what it made.
func (e *svcEnv) stop() {
	e.stopOnce.Do(func() {
		ctx := context.Background()
		e.cancel()
		assert.NoError(e.t, <-e.done)
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		assert.NoError(e.t, e.c.Shutdown(sctx))
	})
}

// assertClean checks that the stopped cluster left nothing on the host: no
// nftables table of its proxy, no service or pod route, no bridge or veth,
// no mounts or pinned namespaces under its run dir, no cgroup tree, no
// supervisor process.
func (e *svcEnv) assertClean() {
	t := e.t
	conn, err := nftables.New()
	require.NoError(t, err)
	tables, err := conn.ListTables()
	require.NoError(t, err)
	for _, tb := range tables {
		assert.NotContains(t, tb.Name, e.nodeName, "nftables table %s left", tb.Name)
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	for _, r := range routes {
		if r.Dst != nil && (r.Dst.String() == e.svcCIDR.String() || r.Dst.String() == e.podCIDR.String()) {
			t.Errorf("route %s left", r)
		}
	}
	_, err = netlink.LinkByName(HostName("pk", e.nodeName))
	assert.Error(t, err, "bridge removed")
	for _, dir := range []string{e.runDir, e.dataDir} {
		left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		require.NoError(t, err)
		assert.Empty(t, left, "mounts or pinned namespaces left under %s", dir)
	}
	_, err = os.Stat("/sys/fs/cgroup/memory/" + HostName("podkit-", e.nodeName))
	assert.True(t, os.IsNotExist(err), "cgroup tree removed")
	if b, err := os.ReadFile(filepath.Join(e.runDir, "supervisor.pid")); err == nil {
		var pid int
		fmt.Sscan(string(b), &pid)
		assert.Eventually(t, func() bool { return !processAlive(pid) }, time.Minute, 50*time.Millisecond, "supervisor exits")
	}
	os.RemoveAll(e.runDir)
}

// backend is a svcbox pod serving HTTP on 8080, Ready while /tmp/unready
// is absent (probed every second, one failure turns it unready).
func backend(name, image string, labels map[string]string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			// The pods need no API credentials; the projected token
			// volume is the kubelet's business, tested elsewhere.
			AutomountServiceAccountToken: ptrTo(false),
			Containers: []corev1.Container{{
				Name: "box", Image: image, Args: []string{"serve"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
				},
			}},
		},
	}
}

func (e *svcEnv) createPods(pods ...*corev1.Pod) {
	for _, p := range pods {
		_, err := e.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(e.t, err)
	}
}

// waitReady waits until the pods are Running and Ready and returns them.
func (e *svcEnv) waitReady(names ...string) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, n := range names {
		require.Eventually(e.t, func() bool {
			p, err := e.client.CoreV1().Pods("default").Get(context.Background(), n, metav1.GetOptions{})
			if err != nil || !podReady(p) {
				return false
			}
			out[n] = p
			return true
		}, 3*time.Minute, 50*time.Millisecond, "pod %s Ready", n)
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exec runs svcbox with args in the pod's container and returns its
// stdout; a non-zero exit is an error carrying stderr.
func (e *svcEnv) exec(pod string, args ...string) (string, error) {
	ctx := context.Background()
	p, err := e.client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
		return "", fmt.Errorf("pod %s has no container yet", pod)
	}
	id := p.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	res, err := e.node.runtime.(sandbox.Execer).ExecSync(ctx, id, append([]string{"/svcbox"}, args...), time.Minute)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return string(res.Stdout), fmt.Errorf("svcbox %v in %s: exit %d: %s", args, pod, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout), nil
}

// hits counts the answers of `svcbox get url n` run in pod by backend
// ("host <name>" lines) and errors ("ERR").
func (e *svcEnv) hits(pod, url string, n int) map[string]int {
	out, err := e.exec(pod, "get", url, fmt.Sprint(n))
	require.NoError(e.t, err)
	m := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(l, "host "):
			m[strings.TrimPrefix(l, "host ")]++
		case l != "":
			m["ERR"]++
		}
	}
	return m
}

// hostGet fetches url from the test process (the host) on a new
// connection.
func hostGet(url string) (string, error) {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

func processAlive(pid int) bool { return unix.Kill(pid, 0) == nil }
