package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTaskLogs(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	spec := shTask(t, root, "logs", `echo out1; echo err1 >&2; printf 'no newline'; echo; echo out2; printf tail`)
	procs := filepath.Join(root, "cgroup.procs")
	require.NoError(t, os.WriteFile(procs, nil, 0o644))
	spec.Native.CgroupProcs = []string{procs}

	st, err := c.CreateTask(ctx, spec)
	require.NoError(t, err)
	assert.Positive(t, st.Pid)
	assert.Equal(t, "logs", st.ID)
	assert.Equal(t, map[string]string{"test": t.Name()}, st.Labels)
	placed, err := os.ReadFile(procs)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(st.Pid), string(placed), "place wrote the pid before the process ran")

	st, err = c.Wait(ctx, "logs")
	require.NoError(t, err)
	assert.True(t, st.Exited)
	assert.Zero(t, st.ExitCode)
	assert.False(t, st.FinishedAt.Before(st.CreatedAt))
	lines := logLines(t, spec.LogPath)
	assert.Subset(t, lines, []string{"stdout F out1", "stderr F err1", "stdout F no newline", "stdout F out2", "stdout P tail"})
	var outs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "stdout") {
			outs = append(outs, l)
		}
	}
	assert.Equal(t, []string{"stdout F out1", "stdout F no newline", "stdout F out2", "stdout P tail"}, outs, "stdout in order")
	require.NoError(t, c.Delete(ctx, "logs"))
	assert.NoDirExists(t, filepath.Join(root, tasksDir, "logs"))
	assert.FileExists(t, spec.LogPath, "the log belongs to the runtime")
}

func TestExitCodes(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name, script string
		code         int32
		signal       int
	}{
		{"zero", "exit 0", 0, 0},
		{"three", "exit 3", 3, 0},
		{"killed", "kill -9 $$", 137, 9},
		{"terminated", "kill -TERM $$", 143, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateTask(ctx, shTask(t, root, tc.name, tc.script))
			require.NoError(t, err)
			st, err := c.Wait(ctx, tc.name)
			require.NoError(t, err)
			assert.True(t, st.Exited)
			assert.Equal(t, tc.code, st.ExitCode)
			assert.Equal(t, tc.signal, st.Signal)
			assert.False(t, st.OOMKilled)
			assert.False(t, st.Orphaned)
			var rec exitRecord
			require.NoError(t, readJSON(filepath.Join(root, tasksDir, tc.name, exitFile), &rec), "exit is on disk")
			assert.Equal(t, tc.code, rec.ExitCode)
		})
	}
}

func TestSignal(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	_, err := c.CreateTask(ctx, shTask(t, root, "sleeper", "exec sleep 1000"))
	require.NoError(t, err)
	st, err := c.State(ctx, "sleeper")
	require.NoError(t, err)
	assert.False(t, st.Exited)

	require.NoError(t, c.Signal(ctx, "sleeper", syscall.SIGTERM))
	st, err = c.Wait(ctx, "sleeper")
	require.NoError(t, err)
	assert.Equal(t, int32(143), st.ExitCode)
	assert.Equal(t, int(syscall.SIGTERM), st.Signal)

	assert.ErrorIs(t, c.Signal(ctx, "sleeper", syscall.SIGTERM), ErrExited)
	assert.NoError(t, c.Signal(ctx, "sleeper", syscall.SIGKILL), "killing an exited task is fine")
	assert.ErrorIs(t, c.Signal(ctx, "nope", syscall.SIGTERM), ErrNotFound)
	assert.NoError(t, c.Signal(ctx, "nope", syscall.SIGKILL), "killing an unknown task is fine")
}

func TestWaitAndEvents(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	evctx, stop := context.WithCancel(ctx)
	events, err := c.Events(evctx)
	require.NoError(t, err)
	gate := fifo(t, root, "gate")
	_, err = c.CreateTask(ctx, shTask(t, root, "gated", "read x < "+gate+"; exit 7"))
	require.NoError(t, err)

	waitCtx, cancelWait := context.WithCancel(ctx)
	cancelWait()
	_, err = c.Wait(waitCtx, "gated")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.Wait(ctx, "nope")
	assert.ErrorIs(t, err, ErrNotFound)

	waited := make(chan TaskState, 1)
	go func() {
		st, err := c.Wait(ctx, "gated")
		assert.NoError(t, err)
		waited <- st
	}()
	release(t, gate)
	ev := <-events
	assert.Equal(t, "gated", ev.ID)
	assert.True(t, ev.Exited)
	assert.Equal(t, int32(7), ev.ExitCode)
	st := <-waited
	assert.Equal(t, ev, st)

	stop()
	for range events { // closed once the stream is cancelled
	}
	st, err = c.State(ctx, "gated")
	require.NoError(t, err, "the connection survives a cancelled stream")
	assert.Equal(t, int32(7), st.ExitCode)
}

func TestCreateErrors(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	gate := fifo(t, root, "gate")
	_, err := c.CreateTask(ctx, shTask(t, root, "one", "read x < "+gate))
	require.NoError(t, err)
	_, err = c.CreateTask(ctx, shTask(t, root, "one", "true"))
	assert.ErrorIs(t, err, ErrAlreadyExists)

	for name, spec := range map[string]TaskSpec{
		"no id":        {Kind: KindNative, Native: &NativeSpec{SpecPath: "/x"}},
		"slash id":     {ID: "a/b", Kind: KindNative, Native: &NativeSpec{SpecPath: "/x"}},
		"dotdot id":    {ID: "..", Kind: KindNative, Native: &NativeSpec{SpecPath: "/x"}},
		"no kind":      {ID: "a"},
		"no native":    {ID: "a", Kind: KindNative},
		"no pid file":  {ID: "a", Kind: KindExec, Exec: &ExecSpec{Argv: []string{"true"}}},
		"relative log": {ID: "a", Kind: KindNative, Native: &NativeSpec{SpecPath: "/x"}, LogPath: "x.log"},
	} {
		_, err := c.CreateTask(ctx, spec)
		assert.ErrorIs(t, err, ErrInvalid, name)
		var st TaskState // the server validates too
		assert.ErrorIs(t, c.call(ctx, false, mCreate, spec, &st), ErrInvalid, name)
	}

	bad := shTask(t, root, "bad", "true")
	bad.Native.SpecPath = filepath.Join(root, "missing.json")
	_, err = c.CreateTask(ctx, bad)
	require.Error(t, err, "the launcher fails")
	assert.NoDirExists(t, filepath.Join(root, tasksDir, "bad"))
	_, err = c.CreateTask(ctx, shTask(t, root, "bad", "true"))
	require.NoError(t, err, "a failed create frees its id")

	assert.ErrorIs(t, c.Delete(ctx, "one"), ErrRunning)
	_, err = c.State(ctx, "nope")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, c.Delete(ctx, "nope"), ErrNotFound)
	st, err := c.State(ctx, "one")
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, "one", WithForce()))
	_, err = c.State(ctx, "one")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.False(t, rootProc{pid: st.Pid}.alive(), "force delete killed and reaped the process")

	list, err := c.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "bad", list[0].ID)
}

func TestNoOutputWithoutLogPath(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	spec := shTask(t, root, "quiet", "echo discarded; exit 4")
	spec.LogPath = ""
	_, err := c.CreateTask(ctx, spec)
	require.NoError(t, err)
	st, err := c.Wait(ctx, "quiet")
	require.NoError(t, err)
	assert.Equal(t, int32(4), st.ExitCode)
	assert.NoDirExists(t, filepath.Join(root, "logs"))
}

// Pipes, log files and pidfds are closed when tasks go: the supervisor's
// open files return to where they were.
func TestNoDescriptorLeak(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	fds := func() int {
		entries, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(c.Pid()), "fd"))
		require.NoError(t, err)
		return len(entries)
	}
	life := func(i int) {
		id := "t" + strconv.Itoa(i)
		_, err := c.CreateTask(ctx, shTask(t, root, id, "echo hi; exit 1"))
		require.NoError(t, err)
		_, err = c.Wait(ctx, id)
		require.NoError(t, err)
		require.NoError(t, c.Delete(ctx, id))
		_, err = c.CreateTask(ctx, shTask(t, root, id+"-long", "exec sleep 100"))
		require.NoError(t, err)
		require.NoError(t, c.Delete(ctx, id+"-long", WithForce()))
		_, err = c.CreateTask(ctx, execTask(t, root, id+"-fail", "echo no >&2; exit 1"))
		require.Error(t, err)
	}
	life(0)
	before := fds()
	for i := 1; i <= 10; i++ {
		life(i)
	}
	assert.Equal(t, before, fds())
}
