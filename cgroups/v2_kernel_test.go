package cgroups

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
)

// cgroup2Mount finds the unified hierarchy: /sys/fs/cgroup on a v2 host,
// /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if _, after, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(after, "cgroup2 ") {
			return strings.Fields(line)[4]
		}
	}
	testutil.SkipOrFail(t, "no cgroup2 hierarchy mounted")
	return ""
}

// TestV2DriverOnTheKernel exercises the v2 driver's process handling on the
// real unified hierarchy, whatever controllers it has: create, move a
// process (which forks) in, list, kill through cgroup.kill, remove.
func TestV2DriverOnTheKernel(t *testing.T) {
	testutil.RequireRoot(t)
	d := &v2{mountpoint: cgroup2Mount(t), mkdir: mkdir, livenessPoll: 20 * time.Millisecond}
	base := "/podkit-cgtest-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	p := base + "/pod/c"
	ctx := context.Background()
	t.Cleanup(func() {
		assert.NoError(t, removeDirs(ctx, d.dirs(base), time.Millisecond))
		assert.NoDirExists(t, d.dir(base), "leak")
	})
	require.NoError(t, d.ensure(p, nil))
	assert.DirExists(t, d.dir(p))

	self, err := os.Executable()
	require.NoError(t, err)
	c := exec.Command(self)
	c.Env = append(os.Environ(), "PODKIT_CGROUPS_HELPER=fork")
	stdin, err := c.StdinPipe()
	require.NoError(t, err)
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() { _ = c.Process.Kill(); <-done })

	require.NoError(t, d.addProc(p, c.Process.Pid))
	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)

	pids, err := d.procs(base)
	require.NoError(t, err)
	assert.ElementsMatch(t, []int{c.Process.Pid, grandchild}, pids, "listed recursively")

	require.NoError(t, d.kill(base))
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("cgroup.kill did not kill the helper")
	}
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "got %v", ws)
	require.Eventually(t, func() bool {
		pids, err := d.procs(base)
		return err == nil && len(pids) == 0
	}, 30*time.Second, 10*time.Millisecond, "the grandchild dies with the cgroup")

	require.NoError(t, removeDirs(ctx, d.dirs(base), time.Millisecond))
	assert.NoDirExists(t, d.dir(base))
	pids, err = d.procs(base)
	require.NoError(t, err)
	assert.Empty(t, pids, "a removed cgroup has no processes")
}

// TestV2DriverReportsMissingControllers asks the real unified hierarchy for
// a controller it lacks (on a hybrid host cpu belongs to v1).
func TestV2DriverReportsMissingControllers(t *testing.T) {
	testutil.RequireRoot(t)
	mnt := cgroup2Mount(t)
	avail, err := os.ReadFile(mnt + "/cgroup.controllers")
	require.NoError(t, err)
	if strings.Contains(string(avail), "cpu ") || strings.HasSuffix(strings.TrimSpace(string(avail)), "cpu") {
		testutil.SkipOrFail(t, "the cpu controller is enabled on this cgroup2 mount: the missing-controller path cannot be reached here")
	}
	d := &v2{mountpoint: mnt, mkdir: mkdir}
	base := "/podkit-cgtest-nocpu-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	t.Cleanup(func() { assert.NoError(t, removeDirs(context.Background(), d.dirs(base), time.Millisecond)) })
	shares := uint64(512)
	err = d.ensure(base+"/x", &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}})
	assert.ErrorIs(t, err, ErrUnsupported)
}
