package native_test

import (
	"bufio"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
)

// TestHostKilled kills the process hosting a Runtime (SIGKILL, no cleanup)
// while its container runs; a new Runtime in another process adopts the
// container, which kept running, and learns its real exit code.
func TestHostKilled(t *testing.T) {
	n := newNode(t)
	mounts, upper := testutil.TestboxMounts(t)
	logDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHost$", "-test.v")
	cmd.Env = append(os.Environ(),
		"NATIVE_HOST_ROOT="+n.root, "NATIVE_HOST_CGROUP="+n.tree.Root(),
		"NATIVE_HOST_NODENS="+n.env.NodeNS.Path(), "NATIVE_HOST_BRIDGE="+n.env.BridgeName,
		"NATIVE_HOST_STATE="+n.env.StateDir, "NATIVE_HOST_CIDR="+n.env.PodCIDR.String(),
		"NATIVE_HOST_LOWER="+strings.TrimPrefix(mounts[0].Options[0], "lowerdir="),
		"NATIVE_HOST_UPPER="+upper, "NATIVE_HOST_WORK="+strings.TrimPrefix(mounts[0].Options[2], "workdir="),
		"NATIVE_HOST_LOGS="+logDir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	ids := map[string]string{}
	sc := bufio.NewScanner(out)
	for len(ids) < 2 && sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && (k == "sandbox" || k == "container") {
			ids[k] = v
		}
	}
	require.Len(t, ids, 2, "the host process reports its sandbox and container")
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()

	ctx := t.Context()
	r := n.runtime(t)
	defer r.Close()
	defer r.RemovePodSandbox(context.Background(), ids["sandbox"])
	sbs, cs, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, sbs, 1)
	assert.Equal(t, sandbox.SandboxReady, sbs[0].State)
	require.Len(t, cs, 1)
	assert.Equal(t, sandbox.ContainerStateRunning, cs[0].State, "the container outlived the killed host")
	assert.Positive(t, cs[0].PID)

	require.NoError(t, r.StopContainer(ctx, ids["container"], 30*time.Second))
	st, err := r.ContainerStatus(ctx, ids["container"])
	require.NoError(t, err)
	assert.Equal(t, sandbox.ContainerStateExited, st.State)
	assert.EqualValues(t, 7, st.ExitCode, "the exit code is learned after the host died")
	assert.Equal(t, sandbox.ReasonError, st.Reason)
	logs, err := os.ReadFile(st.LogPath)
	require.NoError(t, err)
	assert.Contains(t, string(logs), "stdout F waiting for SIGTERM")
	require.NoError(t, r.RemovePodSandbox(ctx, ids["sandbox"]))
	sbs, cs, err = r.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, sbs)
	assert.Empty(t, cs)
}

// TestHelperHost is the host process of TestHostKilled.
func TestHelperHost(t *testing.T) {
	root := os.Getenv("NATIVE_HOST_ROOT")
	if root == "" {
		t.Skip("helper process of TestHostKilled")
	}
	ctx := context.Background()
	tree, err := cgroups.New(cgroups.WithRoot(os.Getenv("NATIVE_HOST_CGROUP")))
	require.NoError(t, err)
	br, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: netip.MustParsePrefix(os.Getenv("NATIVE_HOST_CIDR")), StateDir: os.Getenv("NATIVE_HOST_STATE")},
		cni.WithNodeNetNS(os.Getenv("NATIVE_HOST_NODENS")), cni.WithBridgeName(os.Getenv("NATIVE_HOST_BRIDGE")))
	require.NoError(t, err)
	r, err := native.New(ctx, native.Config{Root: root, Network: br, Cgroups: tree, SupervisorIdleExit: 100 * time.Millisecond})
	require.NoError(t, err)
	cfg := podConfig("host")
	cfg.LogDirectory = os.Getenv("NATIVE_HOST_LOGS")
	sb, err := r.RunPodSandbox(ctx, cfg)
	require.NoError(t, err)
	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{
		Name:    "app",
		Rootfs:  testboxOverlay(os.Getenv("NATIVE_HOST_LOWER"), os.Getenv("NATIVE_HOST_UPPER"), os.Getenv("NATIVE_HOST_WORK")),
		Command: []string{"/bin/testbox", "term-exit", "7"},
		LogPath: "app/0.log",
	})
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	// Announce only once the container has installed its SIGTERM handler:
	// testbox runs as pid 1 of its PID namespace, and a Go pid 1 that gets
	// SIGTERM before signal.Notify exits 2 (the kernel ignores a
	// default-action signal to a namespace's init, so the runtime's
	// re-raise cannot kill it).
	st, err := r.ContainerStatus(ctx, id)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(st.LogPath)
		return strings.Contains(string(b), "waiting for SIGTERM")
	}, 10*time.Second, 5*time.Millisecond, "the container prints its line")
	os.Stdout.WriteString("sandbox=" + sb.ID + "\ncontainer=" + id + "\n")
	syscall.Pause() // until SIGKILL
}

// TestWritesLandInUpperdir checks the container's root filesystem is the
// overlay the caller prepared: its writes appear in the upper directory.
func TestWritesLandInUpperdir(t *testing.T) {
	n := newNode(t)
	ctx := t.Context()
	r := n.runtime(t)
	defer r.Close()
	sb, err := r.RunPodSandbox(ctx, podConfig("upper"))
	require.NoError(t, err)
	defer r.RemovePodSandbox(context.Background(), sb.ID)
	mounts, upper := testutil.TestboxMounts(t)
	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{
		Name: "w", Rootfs: mounts, Command: []string{"/bin/testbox", "write", "/hello.txt", "from the container"},
	})
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	require.Eventually(t, func() bool {
		st, err := r.ContainerStatus(ctx, id)
		return err == nil && st.State == sandbox.ContainerStateExited
	}, 30*time.Second, 20*time.Millisecond)
	st, err := r.ContainerStatus(ctx, id)
	require.NoError(t, err)
	assert.Zero(t, st.ExitCode)
	b, err := os.ReadFile(filepath.Join(upper, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from the container", string(b))
	require.NoError(t, r.RemovePodSandbox(ctx, sb.ID))
}
