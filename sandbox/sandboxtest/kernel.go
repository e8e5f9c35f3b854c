package sandboxtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

// The tests here look from inside containers at what real namespaces and
// security settings give them; they read what testbox prints from the
// containers' logs.

func testPID1(h *harness) {
	sb := h.pod("pid1")
	out := h.outputOK(sb.ID, h.container("pid", "pid"))
	assert.Equal(h.t, []string{"1"}, out, "a container's entrypoint is PID 1 of its namespace")
}

func testLoopback(h *harness) {
	t := h.t
	sb := h.pod("lo")
	srv := h.run(sb.ID, h.container("server", "listen", "127.0.0.1:8080"))
	h.waitOutput(srv, "listening on")
	out := h.outputOK(sb.ID, h.container("client", "dial", "127.0.0.1:8080"))
	host := h.podHostname(sb)
	assert.Equal(t, []string{"hello from " + host}, out, "the client reached the server over the pod's loopback")

	// Another pod's loopback is its own: the same port is free there.
	other := h.pod("lo-other")
	srv2 := h.run(other.ID, h.container("server", "listen", "127.0.0.1:8080"))
	h.waitOutput(srv2, "listening on")
	assert.Equal(t, sandbox.ContainerStateRunning, h.status(srv2).State)
}

// podHostname is the hostname the suite gave a pod.
func (h *harness) podHostname(sb *sandbox.Sandbox) string {
	// podConfig sets Hostname to the pod's name.
	return sb.Pod.Name
}

func testHostnames(h *harness) {
	a, b := h.pod("host-a"), h.pod("host-b")
	outA := h.outputOK(a.ID, h.container("hostname", "hostname"))
	outB := h.outputOK(b.ID, h.container("hostname", "hostname"))
	assert.Equal(h.t, []string{h.podHostname(a)}, outA)
	assert.Equal(h.t, []string{h.podHostname(b)}, outB)
}

func testProcesses(h *harness) {
	a, b := h.pod("ps-a"), h.pod("ps-b")
	for i := range 3 {
		h.run(a.ID, h.container("sleeper"+strconv.Itoa(i), "sleep", "inf"))
	}
	out := h.outputOK(b.ID, h.container("ps", "ps"))
	// Itself, and perhaps the pod's pause process: none of pod a's
	// three sleepers, nor the node's processes.
	assert.NotEmpty(h.t, out)
	assert.LessOrEqual(h.t, len(out), 2, "processes seen from pod b: %q", out)
}

func testMounts(h *harness) {
	a, b := h.pod("mnt-a"), h.pod("mnt-b")
	cfg := h.container("mounts", "mounts")
	cfg.Mounts = []sandbox.Mount{{ContainerPath: "/only-in-a", HostPath: h.t.TempDir()}}
	outA := strings.Join(h.outputOK(a.ID, cfg), "\n")
	outB := strings.Join(h.outputOK(b.ID, h.container("mounts", "mounts")), "\n")
	assert.Contains(h.t, outA, " /only-in-a ", "pod a sees its volume")
	assert.NotContains(h.t, outB, "/only-in-a", "pod b does not see pod a's mounts")
}

func testSharedPID(h *harness) {
	t := h.t
	cfg := h.podConfig("shared")
	cfg.SharePID = true
	sb := h.runPod(cfg)
	assert.Positive(t, sb.PausePID, "a pod sharing its PID namespace has a pause process")
	pid := h.outputOK(sb.ID, h.container("pid", "pid"))
	require.Len(t, pid, 1)
	assert.NotEqual(t, "1", pid[0], "the pause process, not the container, is PID 1")
	ps := h.outputOK(sb.ID, h.container("ps", "ps"))
	require.NotEmpty(t, ps)
	assert.True(t, strings.HasPrefix(ps[0], "1 "), "PID 1 is there: %q", ps)
}

func testReapsOrphans(h *harness) {
	t := h.t
	cfg := h.podConfig("orphans")
	cfg.SharePID = true
	sb := h.runPod(cfg)
	out := h.outputOK(sb.ID, h.container("orphan", "orphan", "0"))
	require.Len(t, out, 1, "orphan prints its child's PID")
	child := out[0]
	// The child exits at once; the pause process must reap it, or it
	// stays in /proc as a zombie. Only pause and ps itself remain.
	n := 0
	var ps []string
	h.eventually("the orphan "+child+" to be reaped", 200*time.Millisecond, func() bool {
		n++
		ps = h.outputOK(sb.ID, h.container("ps"+strconv.Itoa(n), "ps"))
		return len(ps) == 2
	})
	for _, l := range ps {
		assert.False(t, strings.HasPrefix(l, child+" "), "orphan %s still listed: %q", child, ps)
	}
}

func testReadOnlyRootfs(h *harness) {
	t := h.t
	sb := h.pod("rofs")
	ro := h.container("ro", "write", "/x", "y")
	ro.Security.ReadOnlyRootfs = true
	st, _ := h.outputOrCode(sb.ID, ro)
	assert.NotEqual(t, int32(0), st.ExitCode, "writing to a read-only rootfs fails")
	st, _ = h.outputOrCode(sb.ID, h.container("rw", "write", "/x", "y"))
	assert.Equal(t, int32(0), st.ExitCode, "writing to a writable rootfs works")
}

// outputOrCode runs a container to its end; its stdout only when the
// runner keeps logs.
func (h *harness) outputOrCode(sandboxID string, cfg *sandbox.ContainerConfig) (*sandbox.ContainerStatus, []string) {
	h.t.Helper()
	if h.env.Features.Logs {
		return h.output(sandboxID, cfg)
	}
	return h.waitExit(h.run(sandboxID, cfg)), nil
}

func testRunAsUser(h *harness) {
	sb := h.pod("user")
	cfg := h.container("id", "id")
	uid, gid := int64(1000), int64(1000)
	cfg.Security.RunAsUser, cfg.Security.RunAsGroup = &uid, &gid
	out := h.outputOK(sb.ID, cfg)
	require.Len(h.t, out, 1)
	assert.True(h.t, strings.HasPrefix(out[0], "uid=1000 gid=1000 "), "id: %q", out[0])
	root := h.outputOK(sb.ID, h.container("rootid", "id"))
	require.Len(h.t, root, 1)
	assert.True(h.t, strings.HasPrefix(root[0], "uid=0 gid=0 "), "id without a user: %q", root[0])
}

func testCapDrop(h *harness) {
	t := h.t
	sb := h.pod("caps")
	st, out := h.output(sb.ID, h.container("raw", "rawsock"))
	assert.Equal(t, int32(0), st.ExitCode, "the default capabilities include NET_RAW")
	assert.Equal(t, []string{"ok"}, out)
	dropped := h.container("noraw", "rawsock")
	dropped.Security.CapDrop = []string{"NET_RAW"}
	st, out = h.output(sb.ID, dropped)
	assert.NotEqual(t, int32(0), st.ExitCode, "a raw socket without NET_RAW fails")
	assert.NotEqual(t, []string{"ok"}, out)
}

func testNoNewPrivs(h *harness) {
	t := h.t
	sb := h.pod("nnp")
	cfg := h.container("nnp", "caps")
	cfg.Security.NoNewPrivs = true
	out := h.outputOK(sb.ID, cfg)
	require.Len(t, out, 1)
	assert.Contains(t, out[0], "NoNewPrivs=1")
	out = h.outputOK(sb.ID, h.container("privs", "caps"))
	require.Len(t, out, 1)
	assert.Contains(t, out[0], "NoNewPrivs=0")
}

func testVolumes(h *harness) {
	t := h.t
	sb := h.pod("vol")
	roDir, rwDir := t.TempDir(), t.TempDir()
	mounts := []sandbox.Mount{
		{ContainerPath: "/ro", HostPath: roDir, ReadOnly: true},
		{ContainerPath: "/rw", HostPath: rwDir},
	}
	ro := h.container("writero", "write", "/ro/f", "x")
	ro.Mounts = mounts
	st, _ := h.outputOrCode(sb.ID, ro)
	assert.NotEqual(t, int32(0), st.ExitCode, "writing to a read-only volume fails")
	_, err := os.Stat(filepath.Join(roDir, "f"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	rw := h.container("writerw", "write", "/rw/f", "x")
	rw.Mounts = mounts
	st, _ = h.outputOrCode(sb.ID, rw)
	assert.Equal(t, int32(0), st.ExitCode, "writing to a writable volume works")
	data, err := os.ReadFile(filepath.Join(rwDir, "f"))
	require.NoError(t, err, "the write lands in the volume's host directory")
	assert.Equal(t, "x", string(data))
}
