package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
)

// memoryCgroup makes a memory cgroup limited to limit bytes (v1 memory
// controller when mounted, else cgroup v2) and removes it at the end.
// Call it before newRoot: cleanups run last-in first-out, so the tasks
// are gone when the cgroup is removed.
func memoryCgroup(t *testing.T, limit string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "podkit-supervisor-test-" + hex.EncodeToString(b)
	var dir, limitFile string
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		dir, limitFile = filepath.Join("/sys/fs/cgroup/memory", name), "memory.limit_in_bytes"
	} else if c, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(c), "memory") {
		dir, limitFile = filepath.Join("/sys/fs/cgroup", name), "memory.max"
	} else {
		testutil.SkipOrFail(t, "no memory cgroup controller")
	}
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove cgroup: %v", err)
		}
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, limitFile), []byte(limit), 0))
	if _, err := os.Stat(filepath.Join(dir, "memory.swappiness")); err == nil {
		os.WriteFile(filepath.Join(dir, "memory.swappiness"), []byte("0"), 0)
	}
	return dir
}

func TestOOMKilled(t *testing.T) {
	testutil.RequireRoot(t)
	cg := memoryCgroup(t, "67108864") // 64 MiB
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)

	hog := shTask(t, root, "hog", "")
	hog.MemoryCgroupDir = cg
	hog.Native.CgroupProcs = []string{filepath.Join(cg, "cgroup.procs")}
	writeProcessSpec(t, hog.Native.SpecPath, []string{"/proc/self/exe"}, []string{envTestHog + "=1"})
	_, err := c.CreateTask(ctx, hog)
	require.NoError(t, err)
	st, err := c.Wait(ctx, "hog")
	require.NoError(t, err)
	assert.True(t, st.OOMKilled)
	assert.Equal(t, int32(137), st.ExitCode)
	assert.Equal(t, 9, st.Signal)

	// The counter is compared with its value at creation: a later task
	// in the same cgroup is not OOMKilled by the earlier kill.
	calm := shTask(t, root, "calm", "exit 0")
	calm.MemoryCgroupDir = cg
	calm.Native.CgroupProcs = hog.Native.CgroupProcs
	_, err = c.CreateTask(ctx, calm)
	require.NoError(t, err)
	st, err = c.Wait(ctx, "calm")
	require.NoError(t, err)
	assert.False(t, st.OOMKilled)
	assert.Zero(t, st.ExitCode)
}

func TestSupervisorMovesIntoCgroup(t *testing.T) {
	testutil.RequireRoot(t)
	cg := memoryCgroup(t, "1073741824")
	root := newRoot(t)
	procs := filepath.Join(cg, "cgroup.procs")
	c := connect(t, root, WithCgroupProcs(procs))
	data, err := os.ReadFile(procs)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(c.Pid())+"\n", string(data), "the supervisor left the test's cgroup")

	_, err = Connect(testCtx(t), t.TempDir(), WithCgroupProcs("relative/cgroup.procs"))
	assert.Error(t, err)
}
