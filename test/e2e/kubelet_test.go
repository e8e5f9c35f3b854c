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
	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
	"github.com/podkit/podkit/internal/testutil"
)

// TestKubeletProcess runs `podkit apiserver`, `podkit scheduler` and
// `podkit kubelet` as separate processes: a pod applied with the real
// kubectl runs as a real container with an IP from the node's PodCIDR
// (routed through the node's bridge, never the default route), answers on
// that IP, its output comes back through `kubectl logs`, and deleting it
// leaves nothing on the host; stopping the kubelet with --shutdown-pods
// removes the node's bridge and cgroups.
func TestKubeletProcess(t *testing.T) {
	testutil.RequireRoot(t)
	srv := startAPIServer(t, withMemoryStore())
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(podkitBinary, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		return cmd
	}
	sched := start("scheduler", "--kubeconfig", srv.Kubeconfig)
	t.Cleanup(func() { _ = sched.Process.Kill(); _ = sched.Wait() })

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

	suffix := cnitest.RandomHex(3)
	node := "e2e-kubelet-" + suffix
	cidr := netip.MustParsePrefix(fmt.Sprintf("10.250.%d.0/24", cnitest.RandomByte()))
	runDir := filepath.Join("/run/podkit-test", "kubelet-"+suffix)
	// The kubelet shares the API server's host: it issues its node and
	// serving certificates from the cluster CA in the server's PKI.
	kubelet := start("kubelet", "--kubeconfig", srv.Kubeconfig, "--cluster-pki-dir", filepath.Join(srv.DataDir, "pki"),
		"--node-name", node, "--pod-cidr", cidr.String(),
		"--data-dir", t.TempDir(), "--run-dir", runDir, "--log-dir", t.TempDir(), "--address", "127.0.0.1:0", "--shutdown-pods")
	bridge := podkit.HostName("pk", node)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = kubelet.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = kubelet.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			_ = kubelet.Process.Kill()
			<-done
			t.Error("kubelet did not stop within 90s of SIGTERM")
		}
	}
	t.Cleanup(stop)

	k := newKubectl(t, testutil.Kubectl(t, 32), 32, srv)
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: web
    image: %s
    args: ["listen", "0.0.0.0:8080"]
    ports:
    - containerPort: 8080
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
`, imageRef)), 0o644))
	k.OK("apply", "-f", manifest)
	require.Eventually(t, func() bool {
		r := k.Run("get", "pod", "web", "-o", "jsonpath={.status.phase} {.status.conditions[?(@.type==\"Ready\")].status}")
		return r.Code == 0 && strings.TrimSpace(r.Stdout) == "Running True"
	}, 90*time.Second, 200*time.Millisecond, "pod Running and Ready")
	ipStr := strings.TrimSpace(k.OK("get", "pod", "web", "-o", "jsonpath={.status.podIP}"))
	ip, err := netip.ParseAddr(ipStr)
	require.NoError(t, err)
	assert.True(t, cidr.Contains(ip), "pod IP %s from the node's PodCIDR %s", ip, cidr)
	routes, err := netlink.RouteGet(net.IP(ip.AsSlice()))
	require.NoError(t, err)
	require.NotEmpty(t, routes)
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	require.NoError(t, err)
	assert.Equal(t, bridge, link.Attrs().Name, "the pod is routed through the node's bridge, not the default route")

	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(ip, 8080).String(), 5*time.Second)
	require.NoError(t, err)
	buf := make([]byte, 64)
	nr, _ := c.Read(buf)
	c.Close()
	assert.Equal(t, "hello from web\n", string(buf[:nr]))
	assert.Contains(t, k.OK("logs", "web"), "listening on")

	k.OK("delete", "pod", "web")
	require.Eventually(t, func() bool {
		return k.Run("get", "pod", "web").Code != 0
	}, 60*time.Second, 200*time.Millisecond, "pod deleted")
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(runDir))
	require.NoError(t, err)
	assert.Empty(t, left, "no mounts of the pod left")

	stop()
	_, err = netlink.LinkByName(bridge)
	assert.Error(t, err, "the node's bridge is removed at shutdown")
	_, err = os.Stat("/sys/fs/cgroup/memory/" + podkit.HostName("podkit-", node))
	assert.True(t, os.IsNotExist(err), "the node's cgroup tree is removed at shutdown")
	_ = os.RemoveAll(runDir)
}
