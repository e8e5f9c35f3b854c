package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
)

// up is a `podkit up` process.
type up struct {
	cmd      *exec.Cmd
	registry string
	done     chan struct{}
}

var upBanner = regexp.MustCompile(`podkit is up in .*: API server (\S+), (\d+) node\(s\), registry (\S+)`)

func startUp(t *testing.T, dataDir, prefix string) *up {
	t.Helper()
	cmd := exec.Command(podkitBinary, "up", "--data-dir", dataDir, "--port", "-1", "--node-name-prefix", prefix,
		"--cluster-cidr", "10.249.0.0/16")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	u := &up{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, out)
	}()
	go func() { cmd.Wait(); close(u.done) }()
	t.Cleanup(func() { u.stop(t) })
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "podkit up exited before it was up")
			if m := upBanner.FindStringSubmatch(l); m != nil {
				u.registry = m[3]
				return u
			}
		case <-deadline:
			t.Fatal("podkit up not up within 2 minutes")
		}
	}
}

// stop sends SIGTERM (what Ctrl-C does) and waits for the exit.
func (u *up) stop(t *testing.T) {
	select {
	case <-u.done:
		return
	default:
	}
	_ = u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.done:
	case <-time.After(2 * time.Minute):
		_ = u.cmd.Process.Kill()
		<-u.done
		t.Error("podkit up did not stop within 2 minutes of SIGTERM")
	}
}

// TestUp runs `podkit up` as a separate process and drives it with the
// real kubectl: a pod with an init container, a volume and a readiness
// probe runs from the embedded registry's demo image, answers on its IP,
// shows its output through kubectl logs and is deleted without a trace;
// SIGTERM with a pod running leaves a clean host (no run dir, no mount
// under the data dir, where its service account token volume was
// mounted), and podkit up on the same
// data dir resumes the cluster and runs the pod again.
func TestUp(t *testing.T) {
	testutil.RequireRoot(t)
	dataDir := t.TempDir()
	prefix := "e2e-up-" + cnitest.RandomHex(3)
	node := prefix + "-1"
	u := startUp(t, dataDir, prefix)
	srv := &apiServer{Kubeconfig: filepath.Join(dataDir, "kubeconfig")}
	k := newKubectl(t, testutil.Kubectl(t, 32), 32, srv)
	assert.Contains(t, k.OK("get", "nodes"), node)

	pod := func(name string) string {
		p := filepath.Join(t.TempDir(), name+".yaml")
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 3
  initContainers:
  - name: setup
    image: %[2]s/demo/web:1
    args: ["init", "/work/message", "hi from the init container"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: web
    image: %[2]s/demo/web:1
    volumeMounts: [{name: work, mountPath: /work}]
    readinessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
  volumes:
  - name: work
    emptyDir: {}
`, name, u.registry)), 0o644))
		return p
	}
	running := func(name string) netip.Addr {
		require.Eventually(t, func() bool {
			r := k.Run("get", "pod", name, "-o", `jsonpath={.status.phase} {.status.conditions[?(@.type=="Ready")].status}`)
			return r.Code == 0 && strings.TrimSpace(r.Stdout) == "Running True"
		}, 2*time.Minute, 200*time.Millisecond, "pod %s Running and Ready", name)
		ip, err := netip.ParseAddr(strings.TrimSpace(k.OK("get", "pod", name, "-o", "jsonpath={.status.podIP}")))
		require.NoError(t, err)
		assert.True(t, netip.MustParsePrefix("10.249.0.0/16").Contains(ip))
		return ip
	}
	get := func(ip netip.Addr) string {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(ip, 8080).String(), 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
		b, _ := io.ReadAll(c)
		return string(b)
	}

	k.OK("apply", "-f", pod("web"))
	ip := running("web")
	assert.Contains(t, get(ip), "init said: hi from the init container")
	assert.Eventually(t, func() bool { return strings.Contains(k.OK("logs", "web"), "GET / from") }, 30*time.Second, 200*time.Millisecond, "kubectl logs shows the request")
	assert.Contains(t, k.OK("logs", "web", "-c", "setup"), "init: wrote /work/message")
	k.OK("delete", "pod", "web")
	assert.NotEqual(t, 0, k.Run("get", "pod", "web").Code)

	// Ctrl-C with a pod running: a clean host.
	k.OK("apply", "-f", pod("keep"))
	running("keep")
	assert.Contains(t, k.OK("get", "pod", "keep", "-o", "jsonpath={.spec.volumes[*].name}"), "kube-api-access-",
		"the pod has the projected token volume whose mount must not outlive podkit up")
	containerID := func() string {
		return strings.TrimSpace(k.OK("get", "pod", "keep", "-o", "jsonpath={.status.containerStatuses[0].containerID}"))
	}
	before := containerID()
	u.stop(t)
	assert.NoDirExists(t, filepath.Join("/run/podkit", node), "Ctrl-C removed every pod, then the node's run dir")
	assertNodeGone(t, node)
	assertNoMountsUnder(t, dataDir)

	// Resume: the stored pod runs again, in a new container.
	u = startUp(t, dataDir, prefix)
	_, err := netlink.RouteGet(net.ParseIP("10.249.200.1"))
	assert.Error(t, err, "pod addresses no node serves are unreachable, never sent to the default route")
	require.Eventually(t, func() bool { c := containerID(); return c != "" && c != before }, 2*time.Minute, 200*time.Millisecond)
	ip = running("keep")
	assert.Contains(t, get(ip), "hello from keep")
	u.stop(t)
	assert.NoDirExists(t, filepath.Join("/run/podkit", node), "Ctrl-C removed every pod, then the node's run dir")
	assertNodeGone(t, node)
	assertNoMountsUnder(t, dataDir)
}

// assertNoMountsUnder checks that nothing is mounted at or below dir: a
// stopped cluster leaves none of its pods' volumes (the projected
// kube-api-access token, secrets, memory emptyDirs, subPaths) mounted in
// its data dir. What is left is detached, so the test's temporary
// directory can be removed.
func assertNoMountsUnder(t *testing.T, dir string) {
	t.Helper()
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	require.NoError(t, err)
	for _, m := range left {
		t.Errorf("mount left under %s: %s (%s)", dir, m.Mountpoint, m.FSType)
	}
	sort.Slice(left, func(i, j int) bool { return len(left[i].Mountpoint) > len(left[j].Mountpoint) })
	for _, m := range left { // deepest first
		_ = syscall.Unmount(m.Mountpoint, syscall.MNT_DETACH)
	}
}

// assertNodeGone checks a stopped node left nothing on the host.
func assertNodeGone(t *testing.T, node string) {
	t.Helper()
	run := filepath.Join("/run/podkit", node)
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(run))
	require.NoError(t, err)
	assert.Empty(t, left, "mounts left under %s", run)
	_, err = netlink.LinkByName(podkit.HostName("pk", node))
	assert.Error(t, err, "bridge removed")
	links, err := netlink.LinkList()
	require.NoError(t, err)
	for _, l := range links {
		if l.Type() == "veth" && l.Attrs().MasterIndex != 0 {
			if m, err := netlink.LinkByIndex(l.Attrs().MasterIndex); err == nil && m.Attrs().Name == podkit.HostName("pk", node) {
				t.Errorf("veth %s left on the node's bridge", l.Attrs().Name)
			}
		}
	}
	_, err = os.Stat("/sys/fs/cgroup/memory/" + podkit.HostName("podkit-", node))
	assert.True(t, os.IsNotExist(err), "cgroup tree removed")
	b, err := os.ReadFile(filepath.Join(run, "supervisor.pid"))
	if err == nil {
		var pid int
		fmt.Sscan(string(b), &pid)
		require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, time.Minute, 50*time.Millisecond, "supervisor exits")
	}
	os.RemoveAll(run)
}
