package nsinit

import (
	"context"
	"fmt"
	"github.com/podkit/podkit/internal/testutil"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

func TestEntrypointIsPID1(t *testing.T) {
	r := newRootfs(t)
	out, status := run(t, testSpec(r.path, "pid"))
	require.Equal(t, 0, status)
	assert.Equal(t, "1\n", out)

	// /proc is the container's: only the entrypoint is there.
	out, status = run(t, testSpec(r.path, "ps"))
	require.Equal(t, 0, status)
	assert.Equal(t, []string{"1"}, lines(out))
}

func TestJoinedNetworkNamespace(t *testing.T) {
	r := newRootfs(t)
	ns, err := netns.New(t.TempDir(), fmt.Sprintf("nsinit-%d", os.Getpid()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ns.Remove()) })
	var st unix.Stat_t
	require.NoError(t, unix.Stat(ns.Path(), &st))

	spec := testSpec(r.path, "readlink", "/proc/self/ns/net")
	setNamespace(spec, specs.NetworkNamespace, ns.Path(), false)
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, fmt.Sprintf("net:[%d]\n", st.Ino), out)
}

// pinNS creates a namespace (unshare flag, then setup inside it) pinned
// at a file; it is unpinned at cleanup.
func pinNS(t testing.TB, flag int, setup func() error) string {
	p := filepath.Join(t.TempDir(), "ns")
	require.NoError(t, os.WriteFile(p, nil, 0o444))
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		if err := unix.Unshare(flag); err != nil {
			errc <- err
			return
		}
		if setup != nil {
			if err := setup(); err != nil {
				errc <- err
				return
			}
		}
		errc <- unix.Mount(fmt.Sprintf("/proc/self/task/%d", unix.Gettid())+"/ns/"+map[int]string{
			unix.CLONE_NEWUTS: "uts", unix.CLONE_NEWIPC: "ipc", unix.CLONE_NEWNET: "net"}[flag], p, "", unix.MS_BIND, "")
	}()
	require.NoError(t, <-errc)
	t.Cleanup(func() { require.NoError(t, unix.Unmount(p, unix.MNT_DETACH)) })
	return p
}

// pinUTS creates a UTS namespace with hostname name.
func pinUTS(t testing.TB, name string) string {
	return pinNS(t, unix.CLONE_NEWUTS, func() error { return unix.Sethostname([]byte(name)) })
}

func TestHostname(t *testing.T) {
	r := newRootfs(t)
	t.Run("new UTS namespace gets spec.hostname", func(t *testing.T) {
		spec := testSpec(r.path, "hostname")
		spec.Hostname = "fresh-uts"
		out, status := run(t, spec)
		require.Equal(t, 0, status)
		assert.Equal(t, "fresh-uts\n", out)
	})
	t.Run("joined UTS namespace keeps its name", func(t *testing.T) {
		spec := testSpec(r.path, "hostname")
		spec.Hostname = "ignored"
		setNamespace(spec, specs.UTSNamespace, pinUTS(t, "pod-uts-name"), false)
		out, status := run(t, spec)
		require.Equal(t, 0, status)
		assert.Equal(t, "pod-uts-name\n", out)
	})
}

func TestUserAndGroups(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "id")
	spec.Process.User = specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{2000, 3000}}
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "uid=1000 gid=1000 groups=2000,3000\n", out)

	// HOME comes from the image's /etc/passwd; a non-root user keeps no
	// capabilities it was not given.
	spec.Process.Args = []string{boxPath, "env"}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Contains(t, lines(out), "HOME=/home/app")
}

func TestCapabilities(t *testing.T) {
	r := newRootfs(t)
	out, status := run(t, testSpec(r.path, "rawsock"))
	require.Equal(t, 0, status)
	assert.Equal(t, "ok\n", out, "CAP_NET_RAW is in the default set")

	var without []string
	for _, c := range defaultCaps {
		if c != "CAP_NET_RAW" {
			without = append(without, c)
		}
	}
	spec := testSpec(r.path, "rawsock")
	spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: without, Effective: without, Permitted: without}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "operation not permitted\n", out)

	spec.Process.Args = []string{boxPath, "caps"}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	want, err := capMask(without)
	require.NoError(t, err)
	for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
		assert.Contains(t, lines(out), fmt.Sprintf("%s=%016x", set, want))
	}
	assert.Contains(t, lines(out), "CapInh=0000000000000000")

	// A non-root user with an ambient capability keeps it across exec.
	amb := []string{"CAP_NET_RAW"}
	spec.Process.User = specs.User{UID: 1000, GID: 1000}
	spec.Process.Args = []string{boxPath, "rawsock"}
	spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: amb, Effective: amb, Permitted: amb, Inheritable: amb, Ambient: amb}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "ok\n", out)
}

func TestNoNewPrivileges(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "caps")
	out, _ := run(t, spec)
	assert.Contains(t, lines(out), "NoNewPrivs=0")
	spec.Process.NoNewPrivileges = true
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	assert.Contains(t, lines(out), "NoNewPrivs=1")
}

func TestCwdAndEnv(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "pwd")
	spec.Process.Cwd = "/work/dir" // missing: created, like runc
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "/work/dir\n", out)

	spec = testSpec(r.path, "env")
	spec.Process.Env = []string{"PATH=/bin", "A=1", "HOME=/custom"}
	spec.Process.Args = []string{"box", "env"} // found through PATH
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, []string{"PATH=/bin", "A=1", "HOME=/custom"}, lines(out))
}

func TestExecErrors(t *testing.T) {
	r := newRootfs(t)
	for _, tc := range []struct {
		name string
		args []string
		msg  string
		code int
	}{
		{"missing absolute", []string{"/bin/nope"}, `exec: "/bin/nope": no such file or directory`, ExitNotFound},
		{"missing in PATH", []string{"nope"}, `exec: "nope": executable file not found in $PATH`, ExitNotFound},
		{"not executable", []string{"/bin/noexec"}, `exec: "/bin/noexec": permission denied`, ExitNotExecutable},
		{"directory", []string{"/etc"}, `exec: "/etc": permission denied`, ExitNotExecutable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(r.path)
			spec.Process.Args = tc.args
			c, err := create(t, spec, nil)
			require.NoError(t, err)
			err = Start(context.Background(), c.stateDir)
			require.ErrorIs(t, err, ErrExec)
			assert.Contains(t, err.Error(), tc.msg)
			b, err := os.ReadFile(filepath.Join(c.stateDir, ExecErrorName))
			require.NoError(t, err)
			assert.Equal(t, tc.msg+"\n", string(b))
			assert.Equal(t, tc.code, c.wait())
		})
	}
}

func TestCgroupPlacement(t *testing.T) {
	r := newRootfs(t)
	name := fmt.Sprintf("nsinit-test-%d", os.Getpid())
	var dirs []string
	for _, h := range []string{"pids", "memory"} {
		d := filepath.Join(hostCgroupRoot, h, name)
		if _, err := os.Stat(filepath.Dir(d)); err != nil {
			continue
		}
		require.NoError(t, os.Mkdir(d, 0o755))
		t.Cleanup(func() { require.NoError(t, os.Remove(d)) }) // after the init is reaped
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		testutil.SkipOrFail(t, "no cgroup v1 pids or memory hierarchy mounted")
	}
	spec := testSpec(r.path, "cat", "/proc/self/cgroup")
	c, err := create(t, spec, CgroupPlacer(dirs...))
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	require.Equal(t, 0, c.wait())
	for _, d := range dirs {
		assert.Contains(t, c.output(), ":"+filepath.Base(filepath.Dir(d))+":/"+name+"\n")
	}

	// The container sees its own cgroup at /sys/fs/cgroup/<hierarchy>.
	spec = testSpec(r.path, "cat", filepath.Join("/sys/fs/cgroup", filepath.Base(filepath.Dir(dirs[0])), "cgroup.procs"))
	c, err = create(t, spec, CgroupPlacer(dirs...))
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	require.Equal(t, 0, c.wait())
	assert.Equal(t, "1\n", c.output())
}

func TestCreateErrors(t *testing.T) {
	r := newRootfs(t)
	ctx := context.Background()

	spec := testSpec(r.path, "pid")
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/x", Type: "bind", Source: "/does/not/exist"})
	_, err := create(t, spec, nil)
	require.ErrorIs(t, err, ErrSetup)
	assert.Contains(t, err.Error(), "/does/not/exist")

	spec = testSpec(r.path, "pid")
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/x", Type: "nosuchfs", Source: "none"})
	_, err = create(t, spec, nil)
	require.ErrorIs(t, err, ErrSetup)
	assert.Contains(t, err.Error(), "on /x")

	spec = testSpec(r.path, "pid")
	setNamespace(spec, specs.UserNamespace, "", false)
	_, err = create(t, spec, nil)
	require.ErrorIs(t, err, ErrInvalidSpec)

	c, err := create(t, testSpec(r.path, "pid"), func(int) error { return fmt.Errorf("no cgroup for you") })
	require.ErrorContains(t, err, "no cgroup for you")
	assert.NotZero(t, c.pid, "the killed child is returned for reaping")
	assert.NoFileExists(t, filepath.Join(c.stateDir, ExecFIFOName))

	require.ErrorIs(t, Start(ctx, t.TempDir()), ErrNotRunning)

	// An init killed before Start.
	c, err = create(t, testSpec(r.path, "pid"), nil)
	require.NoError(t, err)
	c.kill()
	require.ErrorIs(t, Start(ctx, c.stateDir), ErrNotRunning)
}

func TestStartTwice(t *testing.T) {
	r := newRootfs(t)
	c, err := create(t, testSpec(r.path, "sleep", "inf"), nil)
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	require.ErrorIs(t, Start(context.Background(), c.stateDir), ErrNotRunning)
}
