package native_test

import (
	"context"
	"errors"
	"github.com/podkit/podkit/cni"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
)

// run starts a container with cmd in sb, waits for it to exit and returns
// its stdout from the CRI log.
func run(t *testing.T, r *native.Runtime, sb *sandbox.Sandbox, name string, cmd ...string) string {
	t.Helper()
	ctx := t.Context()
	mounts, _ := testutil.TestboxMounts(t)
	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{
		Name: name, Rootfs: mounts, Command: append([]string{"/bin/testbox"}, cmd...), LogPath: name + "/0.log",
	})
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	var st *sandbox.ContainerStatus
	require.Eventually(t, func() bool {
		st, err = r.ContainerStatus(ctx, id)
		return err == nil && st.State == sandbox.ContainerStateExited
	}, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, st.ExitCode, "container %s", name)
	b, err := os.ReadFile(st.LogPath)
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(l, " ", 4); len(f) == 4 && f[1] == "stdout" {
			out = append(out, f[3])
		}
	}
	return strings.Join(out, "\n")
}

func TestSandboxFilesHostnameAndSysctls(t *testing.T) {
	n := newNode(t)
	ctx := t.Context()
	r := n.runtime(t)
	defer r.Close()
	cfg := podConfig("dns")
	cfg.Hostname = "web-0"
	cfg.LogDirectory = t.TempDir()
	cfg.ResolvConf = []byte("nameserver 10.96.0.10\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n")
	cfg.Hosts = []byte("127.0.0.1 localhost\n10.1.0.5 web-0.web.default.svc.cluster.local web-0\n")
	cfg.HostnameFile = []byte("web-0\n")
	cfg.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "80", "kernel.shmmni": "2048"}
	sb, err := r.RunPodSandbox(ctx, cfg)
	require.NoError(t, err)
	defer r.RemovePodSandbox(context.Background(), sb.ID)
	require.Len(t, sb.IPs, 1)
	assert.True(t, n.env.PodCIDR.Contains(sb.IPs[0]), "pod IP %s from the node's PodCIDR %s", sb.IPs[0], n.env.PodCIDR)

	assert.Equal(t, strings.TrimSpace(string(cfg.ResolvConf)), run(t, r, sb, "resolv", "cat", "/etc/resolv.conf"))
	assert.Equal(t, strings.TrimSpace(string(cfg.Hosts)), run(t, r, sb, "hosts", "cat", "/etc/hosts"))
	assert.Equal(t, "web-0", run(t, r, sb, "hostname", "hostname"))
	assert.Equal(t, "80", run(t, r, sb, "sysctl", "cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start"))
	assert.Equal(t, "2048", run(t, r, sb, "ipc", "cat", "/proc/sys/kernel/shmmni"))
	assert.Contains(t, run(t, r, sb, "ip", "ip"), sb.IPs[0].String())
	require.NoError(t, r.RemovePodSandbox(ctx, sb.ID))
}

func TestBadSandboxConfigs(t *testing.T) {
	n := newNode(t)
	ctx := t.Context()
	r := n.runtime(t)
	defer r.Close()
	for name, mut := range map[string]func(*sandbox.SandboxConfig){
		"not namespaced sysctl": func(c *sandbox.SandboxConfig) { c.Sysctls = map[string]string{"vm.swappiness": "1"} },
		"unknown handler":       func(c *sandbox.SandboxConfig) { c.RuntimeHandler = "kata" },
		"no uid":                func(c *sandbox.SandboxConfig) { c.Pod.UID = "" },
	} {
		cfg := podConfig("bad")
		mut(cfg)
		_, err := r.RunPodSandbox(ctx, cfg)
		assert.Error(t, err, name)
	}
	sbs, _, err := r.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, sbs, "failed sandboxes leave nothing")
}

// failingNet fails every Setup after doing the real one, so the runtime
// must undo a half-made sandbox, network included.
type failingNet struct{ cni.Networker }

func (f failingNet) Setup(ctx context.Context, a *cni.Attachment) (*cni.Result, error) {
	if _, err := f.Networker.Setup(ctx, a); err != nil {
		return nil, err
	}
	return nil, errors.New("injected network failure")
}

func TestFailedSandboxIsUndone(t *testing.T) {
	n := newNode(t)
	ctx := t.Context()
	r, err := native.New(ctx, native.Config{Root: n.root, Network: failingNet{n.bridge}, Cgroups: n.tree,
		SupervisorIdleExit: 100 * time.Millisecond})
	require.NoError(t, err)
	defer r.Close()
	cfg := podConfig("fail")
	cfg.SharePID = true // a pause process to undo as well
	_, err = r.RunPodSandbox(ctx, cfg)
	require.ErrorContains(t, err, "injected network failure")
	sbs, _, err := r.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, sbs)
	assert.ElementsMatch(t, []string{"lo", n.env.BridgeName}, n.env.NodeLinks(t), "the pod's veth is gone")
}

// TestInitBinary runs containers (and an exec) through the small
// podkit-init executable instead of a re-exec of the test binary.
func TestInitBinary(t *testing.T) {
	n := newNode(t)
	bin := filepath.Join(t.TempDir(), "podkit-init")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/podkit-init").CombinedOutput()
	require.NoError(t, err, "%s", out)
	ctx := t.Context()
	r, err := native.New(ctx, native.Config{Root: n.root, Network: n.bridge, Cgroups: n.tree, InitBinary: bin,
		SupervisorIdleExit: 100 * time.Millisecond})
	require.NoError(t, err)
	defer r.Close()
	cfg := podConfig("small")
	cfg.LogDirectory = t.TempDir()
	cfg.SharePID = true
	sb, err := r.RunPodSandbox(ctx, cfg)
	require.NoError(t, err)
	defer r.RemovePodSandbox(context.Background(), sb.ID)
	assert.Equal(t, "hello", run(t, r, sb, "hello", "print", "hello"))
	mounts, _ := testutil.TestboxMounts(t)
	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{Name: "sleeper", Rootfs: mounts, Command: []string{"/bin/testbox", "sleep", "inf"}})
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	res, err := r.ExecSync(ctx, id, []string{"/bin/testbox", "hostname"}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "small\n", string(res.Stdout))
	require.NoError(t, r.RemovePodSandbox(ctx, sb.ID))
}
