package ocispec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
)

// buildOkbox compiles testdata/okbox as a static binary into dir.
func buildOkbox(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(dir, "okbox")
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, "./testdata/okbox")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "build okbox: %s", b)
	return out
}

// capMask is the /proc/<pid>/status hex mask of caps.
func capMask(caps []string) string {
	var m uint64
	for _, c := range caps {
		m |= 1 << uint(slices.Index(capNames[:], c))
	}
	return fmt.Sprintf("%016x", m)
}

// TestRuntimesRunSpec writes a generated spec into a bundle and runs it
// with the real runc and crun: the spec must be accepted, and the
// container checks from inside that it got what the spec says (user and
// groups, cwd, hostname, /etc/hosts, a read-only volume, masked paths,
// capabilities, no_new_privs, its own PID namespace).
func TestRuntimesRunSpec(t *testing.T) {
	testutil.RequireRoot(t)
	okbox := buildOkbox(t, t.TempDir())

	for _, rt := range []struct{ name, path string }{
		{"runc", "/usr/sbin/runc"},
		{"crun", "/usr/bin/crun"},
	} {
		t.Run(rt.name, func(t *testing.T) {
			bin := rt.path
			if _, err := os.Stat(bin); err != nil {
				p, lerr := exec.LookPath(rt.name)
				if lerr != nil {
					testutil.SkipOrFail(t, "%s not installed (apt-get install -y %s)", rt.name, rt.name)
				}
				bin = p
			}
			var wrap []string
			if rt.name == "crun" && hybridWithV2Controllers() {
				// crun refuses cgroup v1+v2 hybrids whose v2 hierarchy
				// has controllers (this machine's has hugetlb). Hide the
				// v2 hierarchy in a private mount namespace that dies
				// with the command, so crun sees a plain v1 host.
				unshare, err := exec.LookPath("unshare")
				if err != nil {
					testutil.SkipOrFail(t, "crun needs unshare(1) on this hybrid cgroup host: %v", err)
				}
				t.Log("hybrid cgroup host with v2 controllers: running crun with the v2 hierarchy hidden")
				wrap = []string{unshare, "--mount", "--propagation", "private", "sh", "-c",
					`mount -t tmpfs none /sys/fs/cgroup/unified && exec "$@"`, "crun"}
			}
			t.Run("checked", func(t *testing.T) { runBundle(t, append(wrap, bin), okbox, false) })
			t.Run("privileged", func(t *testing.T) { runBundle(t, append(wrap, bin), okbox, true) })
		})
	}
}

// hybridWithV2Controllers reports a cgroup v1 host whose cgroup2
// hierarchy (/sys/fs/cgroup/unified) has controllers enabled.
func hybridWithV2Controllers() bool {
	b, err := os.ReadFile("/sys/fs/cgroup/unified/cgroup.controllers")
	return err == nil && strings.TrimSpace(string(b)) != ""
}

// runBundle runs okbox in a bundle with the runtime command rt (the
// binary, possibly behind a wrapper) and checks its verdict. A
// privileged container (every capability the test process holds, all
// devices, nothing masked) only has to start and print "ok".
func runBundle(t *testing.T, rt []string, okbox string, privileged bool) {
	runtimeBin := rt[len(rt)-1]
	stateRoot := t.TempDir()
	command := func(ctx context.Context, args ...string) *exec.Cmd {
		args = append(append(slices.Clone(rt[1:]), "--root", stateRoot), args...)
		return exec.CommandContext(ctx, rt[0], args...)
	}
	id := fmt.Sprintf("ocispec-%s-%d-%d", filepath.Base(runtimeBin), os.Getpid(), time.Now().UnixNano())
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	require.NoError(t, os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755))
	// After pivot_root the rootfs is "/": a non-root user must reach it.
	require.NoError(t, os.Chmod(rootfs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(rootfs, "etc/passwd"), []byte(testPasswd), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(rootfs, "etc/group"), []byte(testGroup), 0o644))
	b, err := os.ReadFile(okbox)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(rootfs, "okbox"), b, 0o755))

	vol := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(vol, 0o755))
	hosts := filepath.Join(t.TempDir(), "hosts")
	const hostsContent = "127.0.0.1 localhost okbox-host\n"
	require.NoError(t, os.WriteFile(hosts, []byte(hostsContent), 0o644))

	cgroupsPath := "/" + id
	limit := int64(64 << 20)
	in := Input{
		SandboxID:   "sb-" + id,
		ContainerID: id,
		Sandbox:     &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: "okbox", Namespace: "test", UID: "u1"}},
		Container: &sandbox.ContainerConfig{
			Name:        "okbox",
			Image:       "okbox:test",
			ImageConfig: sandbox.ImageConfig{Entrypoint: []string{"/okbox"}, User: "app"},
			Args:        []string{"check"},
			WorkingDir:  "/data",
			Mounts:      []sandbox.Mount{{ContainerPath: "/data", HostPath: vol, ReadOnly: true}},
			Resources:   &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}},
			Security: sandbox.SecurityConfig{
				SupplementalGroups: []int64{4242},
				CapDrop:            []string{"NET_RAW"},
				NoNewPrivs:         true,
			},
		},
		RootfsPath:  rootfs,
		HostNetwork: true,
		HostIPC:     true,
		HostsPath:   hosts,
		CgroupsPath: cgroupsPath,
		Hostname:    "okbox-host",
	}
	if privileged {
		in.Container.Args = nil
		in.Container.ImageConfig.User = ""
		in.Container.Security = sandbox.SecurityConfig{Privileged: true}
	}
	s, err := Generate(in)
	require.NoError(t, err)

	wantCaps, err := Capabilities(in.Container.Security, nil)
	require.NoError(t, err)
	s.Process.Env = append(s.Process.Env,
		"WANT_UID=1000", "WANT_GID=1000", "WANT_GROUPS=29,50,1000,4242",
		"WANT_CWD=/data", "WANT_HOSTNAME=okbox-host", "WANT_HOSTS="+hostsContent, "RO_DIR=/data",
		"WANT_CAPBND="+capMask(wantCaps), "WANT_CAPEFF="+capMask(nil), // a non-root exec drops its effective set
		"WANT_NONEWPRIVS=1", "WANT_PPID=0",
	)
	cfg, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "config.json"), cfg, 0o644))

	t.Cleanup(func() {
		out, err := command(context.Background(), "delete", "-f", id).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "not exist") && !strings.Contains(string(out), "not found") {
			t.Errorf("%s delete -f %s: %v: %s", runtimeBin, id, err, out)
		}
		entries, err := os.ReadDir(stateRoot)
		assert.NoError(t, err)
		assert.Empty(t, entries, "runtime state left behind")
		for _, ctrl := range []string{"memory", "pids", "devices", "unified", "systemd", ""} {
			dir := filepath.Join("/sys/fs/cgroup", ctrl, cgroupsPath)
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("cgroup %s left behind", dir)
				_ = os.Remove(dir)
			}
		}
	})

	// A guard against a hung runtime, not a timed assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := command(ctx, "run", "--bundle", bundle, id)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "%s run: stdout %q stderr %q\nconfig.json:\n%s", runtimeBin, stdout.String(), stderr.String(), cfg)
	assert.Equal(t, "ok\n", stdout.String(), "stderr: %s", stderr.String())
}
