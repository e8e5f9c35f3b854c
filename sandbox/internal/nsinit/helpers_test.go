package nsinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
)

func TestMain(m *testing.M) {
	if IsChildMode() {
		Main()
	}
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// shared holds the lower layer every test rootfs stacks on: the static box
// binary plus /etc/passwd and /etc/group, built once per test binary.
var shared struct {
	once sync.Once
	dir  string
	err  error
}

const boxPath = "/bin/box"

func lowerDir(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "nsinit-lower-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		for _, d := range []string{"bin", "etc", "tmp", "data"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				shared.err = err
				return
			}
		}
		_ = os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
		files := map[string]string{
			"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
			"etc/group":  "root:x:0:\napp:x:1000:\nnogroup:x:65534:\n",
			"etc/marker": "from-the-image\n",
			"bin/noexec": "not executable\n",
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				shared.err = err
				return
			}
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, boxPath), "./testdata/box")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			shared.err = fmt.Errorf("build box: %v: %s", err, out)
		}
	})
	require.NoError(t, shared.err)
	return shared.dir
}

// testRootfs is an overlay rootfs over the shared lower layer.
type testRootfs struct {
	path, upper string
}

func newRootfs(t testing.TB) testRootfs {
	t.Helper()
	testutil.RequireRoot(t)
	lower := lowerDir(t)
	dir := t.TempDir()
	r := testRootfs{path: filepath.Join(dir, "rootfs"), upper: filepath.Join(dir, "upper")}
	work := filepath.Join(dir, "work")
	for _, d := range []string{r.path, r.upper, work} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, overlay.MountAll([]overlay.Mount{{
		Type: "overlay", Source: "overlay",
		Options: []string{"lowerdir=" + lower, "upperdir=" + r.upper, "workdir=" + work},
	}}, r.path))
	t.Cleanup(func() { require.NoError(t, overlay.Unmount(r.path)) })
	return r
}

// defaultCaps is containerd's default capability set.
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// testSpec is a spec shaped like containerd's default: new PID, IPC, UTS,
// network and mount namespaces, the usual mounts, masked and read-only
// paths, default capabilities.
func testSpec(root string, args ...string) *specs.Spec {
	caps := &specs.LinuxCapabilities{Bounding: defaultCaps, Effective: defaultCaps, Permitted: defaultCaps}
	return &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: root},
		Hostname: "box",
		Process: &specs.Process{
			Args:         append([]string{boxPath}, args...),
			Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin", "GOMAXPROCS=1"},
			Cwd:          "/",
			Capabilities: caps,
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace},
			},
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
				"/sys/devices/virtual/powercap", "/proc/scsi",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

// setNamespace replaces (or adds) the namespace of typ; path "" makes it
// new, remove drops it (the host's).
func setNamespace(s *specs.Spec, typ specs.LinuxNamespaceType, path string, remove bool) {
	var out []specs.LinuxNamespace
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != typ {
			out = append(out, ns)
		}
	}
	if !remove {
		out = append(out, specs.LinuxNamespace{Type: typ, Path: path})
	}
	s.Linux.Namespaces = out
}

// container is a created init under test.
type container struct {
	t        testing.TB
	pid      int
	stateDir string
	stdout   string
	stderr   string
	reaped   bool
}

// create runs Create with stdout and stderr going to files; the init is
// killed and reaped at cleanup.
func create(t testing.TB, spec *specs.Spec, place func(int) error) (*container, error) {
	t.Helper()
	dir := t.TempDir()
	c := &container{t: t, stateDir: filepath.Join(dir, "state"), stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr")}
	require.NoError(t, os.Mkdir(c.stateDir, 0o700))
	out, err := os.Create(c.stdout)
	require.NoError(t, err)
	defer out.Close()
	errf, err := os.Create(c.stderr)
	require.NoError(t, err)
	defer errf.Close()
	pid, err := Create(context.Background(), CreateConfig{Spec: spec, StateDir: c.stateDir, Stdout: out, Stderr: errf, Place: place})
	c.pid = pid
	if pid > 0 {
		t.Cleanup(c.kill)
	}
	return c, err
}

// run creates, starts and waits for a container; it returns its stdout
// and exit status.
func run(t testing.TB, spec *specs.Spec) (string, int) {
	t.Helper()
	c, err := create(t, spec, nil)
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	status := c.wait()
	return c.output(), status
}

// wait reaps the init and returns its shell-style exit status.
func (c *container) wait() int {
	c.t.Helper()
	var ws unix.WaitStatus
	_, err := unix.Wait4(c.pid, &ws, 0, nil)
	require.NoError(c.t, err)
	c.reaped = true
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func (c *container) output() string {
	b, err := os.ReadFile(c.stdout)
	require.NoError(c.t, err)
	return string(b)
}

func (c *container) errors() string {
	b, _ := os.ReadFile(c.stderr)
	return string(b)
}

func (c *container) kill() {
	if c.reaped {
		return
	}
	_ = unix.Kill(c.pid, unix.SIGKILL)
	_, err := unix.Wait4(c.pid, nil, 0, nil)
	if err != nil && !errors.Is(err, unix.ECHILD) {
		c.t.Errorf("reap %d: %v", c.pid, err)
	}
	c.reaped = true
}

func lines(s string) []string { return strings.Fields(strings.TrimSpace(s)) }
