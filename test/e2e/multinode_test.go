package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
	"github.com/podkit/podkit/internal/testutil"
)

// TestMultiProcessTwoNodes runs the control plane and two nodes as five
// separate processes — `podkit apiserver`, `podkit scheduler`, `podkit
// controller-manager` and two `podkit kubelet` that differ only in
// --node-name and --data-dir (no --pod-cidr: node IPAM assigns each a
// range; bridge, cgroup root and run dir derive from the node name). Pods
// pinned to each node by the scheduler's node selector run there, and pods
// on different nodes reach each other by IP: each node's bridge holds its
// PodCIDR's gateway, so the host routes between the two bridges (with
// forwarding on, which the bridge networker enables). Addresses of the
// cluster range that no node serves never take the default route. Stopping
// the kubelets with --shutdown-pods leaves a clean host.
func TestMultiProcessTwoNodes(t *testing.T) {
	testutil.RequireRoot(t)
	srv := startAPIServer(t, withMemoryStore())
	suffix := cnitest.RandomHex(3)
	clusterCIDR := netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 140+int(cnitest.RandomByte())%20))
	guardClusterCIDR(t, clusterCIDR)

	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(podkitBinary, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start(), "podkit %v", args)
		return cmd
	}
	for _, args := range [][]string{
		{"scheduler", "--kubeconfig", srv.Kubeconfig},
		{"controller-manager", "--kubeconfig", srv.Kubeconfig, "--cluster-cidr", clusterCIDR.String()},
	} {
		cmd := start(args...)
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}

	reg, err := registry.New(registry.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, reg.Start())
	t.Cleanup(func() { reg.Close() })
	img, err := build.FromDir(testutil.TestboxRootfs(t), build.Config{Entrypoint: []string{"/bin/testbox"}})
	require.NoError(t, err)
	imageRef := reg.Addr() + "/podkit/testbox:1"
	ref, err := name.ParseReference(imageRef)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))

	nodes := []string{"e2e-mp-" + suffix + "-a", "e2e-mp-" + suffix + "-b"}
	logDir := t.TempDir()
	for _, node := range nodes {
		kubelet := start("kubelet", "--kubeconfig", srv.Kubeconfig, "--cluster-pki-dir", filepath.Join(srv.DataDir, "pki"),
			"--node-name", node, "--data-dir", t.TempDir(),
			"--log-dir", logDir, "--address", "127.0.0.1:0", "--shutdown-pods")
		t.Cleanup(func() {
			stopProcess(t, kubelet, 90*time.Second)
			assertNodeGone(t, node)
			_ = os.RemoveAll(filepath.Join("/run/podkit", node))
		})
	}

	k := newKubectl(t, testutil.Kubectl(t, 32), 32, srv)
	cidrs := map[string]netip.Prefix{}
	require.Eventually(t, func() bool {
		for _, node := range nodes {
			r := k.Run("get", "node", node, "-o", `jsonpath={.spec.podCIDR} {.status.conditions[?(@.type=="Ready")].status}`)
			f := strings.Fields(r.Stdout)
			if r.Code != 0 || len(f) != 2 || f[1] != "True" {
				return false
			}
			p, err := netip.ParsePrefix(f[0])
			require.NoError(t, err)
			cidrs[node] = p
		}
		return true
	}, 2*time.Minute, 250*time.Millisecond, "both nodes Ready with a PodCIDR from node IPAM")
	a, b := cidrs[nodes[0]], cidrs[nodes[1]]
	assert.True(t, clusterCIDR.Contains(a.Addr()) && clusterCIDR.Contains(b.Addr()), "ranges %s and %s from %s", a, b, clusterCIDR)
	assert.False(t, a.Overlaps(b), "distinct ranges")

	manifest := func(podName, node string, args ...string) string {
		restart := "Always"
		if args[0] == "dial" {
			restart = "Never"
		}
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: %s}
  containers:
  - name: main
    image: %s
    args: [%s]
`, podName, restart, node, imageRef, `"`+strings.Join(args, `", "`)+`"`)
	}
	apply(t, k, manifest("srv-a", nodes[0], "listen", "0.0.0.0:8080")+"---\n"+manifest("srv-b", nodes[1], "listen", "0.0.0.0:8080"))
	ips := map[string]netip.Addr{}
	for pod, node := range map[string]string{"srv-a": nodes[0], "srv-b": nodes[1]} {
		require.Eventually(t, func() bool {
			r := k.Run("get", "pod", pod, "-o", "jsonpath={.status.phase} {.spec.nodeName} {.status.podIP}")
			f := strings.Fields(r.Stdout)
			if r.Code != 0 || len(f) != 3 || f[0] != "Running" {
				return false
			}
			require.Equal(t, node, f[1], "pod %s on its node", pod)
			ips[pod] = netip.MustParseAddr(f[2])
			return true
		}, 2*time.Minute, 250*time.Millisecond, "pod %s Running", pod)
	}
	assert.True(t, a.Contains(ips["srv-a"]), "srv-a's IP %s from %s's range %s", ips["srv-a"], nodes[0], a)
	assert.True(t, b.Contains(ips["srv-b"]), "srv-b's IP %s from %s's range %s", ips["srv-b"], nodes[1], b)

	// The host routes each node's range to that node's bridge, and the
	// rest of the cluster range nowhere.
	for pod, node := range map[string]string{"srv-a": nodes[0], "srv-b": nodes[1]} {
		routes, err := netlink.RouteGet(ips[pod].AsSlice())
		require.NoError(t, err)
		link, err := netlink.LinkByIndex(routes[0].LinkIndex)
		require.NoError(t, err)
		assert.Equal(t, podkit.HostName("pk", node), link.Attrs().Name, "%s routed via its node's bridge", pod)
	}
	unused := netip.AddrFrom4([4]byte{clusterCIDR.Addr().As4()[0], clusterCIDR.Addr().As4()[1], 250, 9})
	_, err = netlink.RouteGet(unused.AsSlice())
	assert.Error(t, err, "%s (no node's) is unreachable, not sent to the default route", unused)

	// Cross-node traffic, both ways, pod IP to pod IP.
	apply(t, k, manifest("cli-a", nodes[0], "dial", netip.AddrPortFrom(ips["srv-b"], 8080).String())+"---\n"+
		manifest("cli-b", nodes[1], "dial", netip.AddrPortFrom(ips["srv-a"], 8080).String()))
	for cli, want := range map[string]string{"cli-a": "hello from srv-b", "cli-b": "hello from srv-a"} {
		require.Eventually(t, func() bool {
			phase := strings.TrimSpace(k.OK("get", "pod", cli, "-o", "jsonpath={.status.phase}"))
			require.NotEqual(t, "Failed", phase, "%s could not reach the other node's pod", cli)
			return phase == "Succeeded"
		}, 2*time.Minute, 250*time.Millisecond, "pod %s dialled across nodes", cli)
		assert.Equal(t, want, strings.TrimSpace(k.OK("logs", cli)))
	}
	k.OK("delete", "pod", "srv-a", "srv-b", "cli-a", "cli-b")
}

// guardClusterCIDR routes the cluster range nowhere (an unreachable route)
// for the test's duration, as podkit up does for its own: addresses no
// node's bridge covers never reach the default route.
func guardClusterCIDR(t *testing.T, p netip.Prefix) {
	t.Helper()
	r := &netlink.Route{Dst: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}, Type: unix.RTN_UNREACHABLE, Table: unix.RT_TABLE_MAIN}
	require.NoError(t, netlink.RouteReplace(r))
	t.Cleanup(func() { assert.NoError(t, netlink.RouteDel(r)) })
}

// stopProcess sends SIGTERM and waits, killing after timeout.
func stopProcess(t *testing.T, cmd *exec.Cmd, timeout time.Duration) {
	t.Helper()
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("%v did not stop within %s of SIGTERM", cmd.Args, timeout)
	}
}
