package nsinit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestSysctlOOMScoreAndRlimits(t *testing.T) {
	r := newRootfs(t)
	host, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	require.NoError(t, err)
	want := "1"
	if strings.TrimSpace(string(host)) == "1" {
		want = "0"
	}
	spec := testSpec(r.path, "cat", "/proc/sys/net/ipv4/ip_forward")
	spec.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": want, "kernel.msgmax": "4096"}
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, want+"\n", out, "the container's network namespace got the sysctl")
	after, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	require.NoError(t, err)
	assert.Equal(t, string(host), string(after), "the host's is untouched")

	spec = testSpec(r.path, "cat", "/proc/self/oom_score_adj")
	adj := 742
	spec.Process.OOMScoreAdj = &adj
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "742\n", out)

	spec = testSpec(r.path, "cat", "/proc/self/limits")
	// Not RLIMIT_NOFILE: the entrypoint, a Go program, raises its own.
	spec.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_MSGQUEUE", Soft: 1000, Hard: 2000}}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Regexp(t, `Max msgqueue size\s+1000\s+2000\s+bytes`, out)

	spec.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_WINGS", Soft: 1, Hard: 1}}
	_, err = create(t, spec, nil)
	require.ErrorIs(t, err, ErrInvalidSpec)
}

func TestExecCopiesOOMScore(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "sleep", "inf")
	adj := 555
	spec.Process.OOMScoreAdj = &adj
	c := running(t, spec)
	out, _, code, err := execIn(t, c, boxProcess("cat", "/proc/self/oom_score_adj"))
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Equal(t, "555\n", out)
}

func TestDevices(t *testing.T) {
	r := newRootfs(t)
	out, status := run(t, testSpec(r.path, "stat", "/dev/null"))
	require.Equal(t, 0, status)
	assert.Equal(t, "mode=20666 rdev=1:3 uid=0 gid=0\n", out)

	out, status = run(t, testSpec(r.path, "readlink", "/dev/ptmx"))
	require.Equal(t, 0, status)
	assert.Equal(t, "pts/ptmx\n", out)

	uid, gid := uint32(1000), uint32(1000)
	mode := os.FileMode(0o600)
	spec := testSpec(r.path, "stat", "/dev/net/tun")
	spec.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/net/tun", Type: "c", Major: 10, Minor: 200, FileMode: &mode, UID: &uid, GID: &gid}}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "mode=20600 rdev=10:200 uid=1000 gid=1000\n", out)
}

func TestRootfsPropagation(t *testing.T) {
	r := newRootfs(t)
	for _, p := range []string{"rprivate", "rshared", "slave"} {
		spec := testSpec(r.path, "pid")
		spec.Linux.RootfsPropagation = p
		out, status := run(t, spec)
		require.Equal(t, 0, status, p)
		assert.Equal(t, "1\n", out, p)
	}
}

func TestCgroupNamespace(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "cat", "/proc/self/cgroup")
	setNamespace(spec, specs.CgroupNamespace, "", false)
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	for _, l := range lines(out) {
		assert.True(t, strings.HasSuffix(l, ":/"), "every cgroup is the namespace root: %q", l)
	}
	// The hierarchies are fresh mounts of the namespace's root.
	spec.Process.Args = []string{boxPath, "cat", "/proc/self/mountinfo"}
	out, status = run(t, spec)
	require.Equal(t, 0, status)
	assert.Regexp(t, `(?m) / /sys/fs/cgroup/memory .* - cgroup cgroup .*memory`, out)
}

func TestCreateCancelled(t *testing.T) {
	r := newRootfs(t)
	ctx, cancel := context.WithCancel(context.Background())
	state := t.TempDir()
	pid, err := Create(ctx, CreateConfig{Spec: testSpec(r.path, "pid"), StateDir: state, Place: func(int) error {
		cancel()
		return nil
	}})
	if pid > 0 {
		_, _ = unix.Wait4(pid, nil, 0, nil) // killed by Create
	}
	require.ErrorIs(t, err, context.Canceled)
	assert.NotZero(t, pid)
	assert.NoFileExists(t, filepath.Join(state, ExecFIFOName))
}

func TestConcurrentCreate(t *testing.T) {
	r := newRootfs(t)
	uts := pinUTS(t, "shared-uts")
	const n = 6
	var wg sync.WaitGroup
	outs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := testSpec(r.path, "hostname")
			if i%2 == 0 {
				setNamespace(spec, specs.UTSNamespace, uts, false)
			} else {
				spec.Hostname = fmt.Sprintf("own-%d", i)
			}
			c, err := create(t, spec, nil)
			if !assert.NoError(t, err) {
				return
			}
			if assert.NoError(t, Start(context.Background(), c.stateDir)) {
				c.wait()
				outs[i] = c.output()
			}
		}()
	}
	wg.Wait()
	for i, out := range outs {
		want := fmt.Sprintf("own-%d\n", i)
		if i%2 == 0 {
			want = "shared-uts\n"
		}
		assert.Equal(t, want, out, "container %d", i)
	}
	// The threads that joined namespaces were discarded, not reused: this
	// test process is still in its own UTS namespace.
	h, err := os.Hostname()
	require.NoError(t, err)
	assert.NotEqual(t, "shared-uts", h)
}
