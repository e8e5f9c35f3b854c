package cgroups_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/internal/testutil"
)

// cpusetDir is path's directory in the v1 cpuset hierarchy ("" without).
func cpusetDir(tr *cgroups.Tree, path string) string {
	for _, d := range tr.Dirs(path) {
		if d == "/sys/fs/cgroup/cpuset" || strings.HasPrefix(d, "/sys/fs/cgroup/cpuset/") {
			return d
		}
	}
	return ""
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// A v1 cpuset takes no process while its cpus or mems are empty: every
// level of the tree, the pod and the container must hold the host's values
// (copied at the top, then inherited through cgroup.clone_children), and a
// process must be placeable in the container cgroup.
func TestHostCpusetIsPopulatedAtEveryLevel(t *testing.T) {
	tr := hostTree(t)
	if tr.Version() != 1 {
		testutil.SkipOrFail(t, "the host runs cgroup v2: no v1 cpuset hierarchy")
	}
	ctx := t.Context()
	pp, err := tr.EnsurePod(ctx, pod("cpuset", nil, nil))
	require.NoError(t, err)
	cp, err := tr.EnsureContainer(ctx, pp, "c", nil)
	require.NoError(t, err)
	top := cpusetDir(tr, "/")
	if top == "" {
		testutil.SkipOrFail(t, "no v1 cpuset hierarchy mounted")
	}
	want := map[string]string{"cpuset.cpus": readTrim(t, filepath.Join(top, "cpuset.cpus")), "cpuset.mems": readTrim(t, filepath.Join(top, "cpuset.mems"))}
	for _, p := range []string{tr.Root(), tr.Root() + "/besteffort", pp, cp} {
		d := cpusetDir(tr, p)
		require.NotEmpty(t, d, p)
		for f, v := range want {
			assert.Equal(t, v, readTrim(t, filepath.Join(d, f)), "%s of %s", f, p)
		}
	}
	assert.Equal(t, "1", readTrim(t, filepath.Join(cpusetDir(tr, tr.Root()), "cgroup.clone_children")), "the tree's root has its children copy their cpuset")

	// Ensuring again changes nothing and fails nothing.
	_, err = tr.EnsureContainer(ctx, pp, "c", nil)
	require.NoError(t, err)

	h := startHelper(t, "fork")
	require.NoError(t, tr.AddProcess(ctx, cp, h.cmd.Process.Pid))
	h.release(t)
	h.readPid(t)
	require.NoError(t, tr.Remove(ctx, pp))
	h.wait(t)
}
