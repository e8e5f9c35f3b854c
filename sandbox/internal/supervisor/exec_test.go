package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execTask is a KindExec task: /bin/sh -c script, like `runc create`
// leaving a process behind and naming it in the pid file (available to
// the script as $PIDFILE).
func execTask(t *testing.T, root, id, script string) TaskSpec {
	t.Helper()
	dir := filepath.Join(root, "bundles", id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	pidFile := filepath.Join(dir, "pid")
	return TaskSpec{ID: id, Kind: KindExec, LogPath: filepath.Join(root, "logs", id+".log"),
		Exec: &ExecSpec{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "PIDFILE=" + pidFile},
			Dir: dir, PidFile: pidFile}}
}

func TestExecKindAdoptsProcess(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	gate := fifo(t, root, "gate")
	spec := execTask(t, root, "adopted", `echo creating; (echo adopted-out; read x < `+gate+`; echo adopted-err >&2; exit 9) & echo $! > $PIDFILE`)
	st, err := c.CreateTask(ctx, spec)
	require.NoError(t, err)
	b, err := os.ReadFile(spec.Exec.PidFile)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(b)), strconv.Itoa(st.Pid), "the task is the process of the pid file")
	ps, err := readProcStat(st.Pid)
	require.NoError(t, err)
	assert.Equal(t, c.Pid(), ps.ppid, "the command exited and its child was reparented to the subreaper")

	release(t, gate)
	st, err = c.Wait(ctx, "adopted")
	require.NoError(t, err)
	assert.Equal(t, int32(9), st.ExitCode)
	assert.Subset(t, logLines(t, spec.LogPath), []string{"stdout F creating", "stdout F adopted-out", "stderr F adopted-err"})
}

func TestExecKindProcessExitsBeforeAdoption(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	// The adopted process has exited (a zombie of the command) before the
	// command exits: the supervisor reaps it before it knows the pid.
	spec := execTask(t, root, "early", "")
	exe, err := os.Executable()
	require.NoError(t, err)
	spec.Exec.Argv = []string{exe}
	spec.Exec.Env = []string{envTestZombie + "=" + spec.Exec.PidFile}
	_, err = c.CreateTask(ctx, spec)
	require.NoError(t, err)
	st, err := c.Wait(ctx, "early")
	require.NoError(t, err)
	assert.True(t, st.Exited)
	assert.Equal(t, int32(4), st.ExitCode)
}

func TestExecKindFailures(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"fails", "echo starting; echo boom: no such container >&2; exit 2", []string{"exited with status 2", "boom: no such container"}},
		{"killed", "kill -9 $$", []string{"killed by signal"}},
		{"no-pid-file", "exit 0", []string{"exited 0 but", "no such file"}},
		{"garbage-pid", "echo nope > $PIDFILE", []string{`holds "nope\n"`}},
		{"not-child", "echo 1 > $PIDFILE", []string{"not a child of the supervisor"}},
		{"gone-pid", "sh -c 'echo $$ > $PIDFILE'; sleep 0.1", []string{"does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateTask(ctx, execTask(t, root, tc.name, tc.script))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			_, err = c.State(ctx, tc.name)
			assert.ErrorIs(t, err, ErrNotFound)
			assert.NoDirExists(t, filepath.Join(root, tasksDir, tc.name))
		})
	}
}

// Giving up on an exec task's command (the caller's context) kills it and
// everything it started.
func TestExecKindCancelled(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	helperPid, childPid := filepath.Join(root, "helper.pid"), filepath.Join(root, "child.pid")
	t.Cleanup(func() { // even when the test fails (runs before the supervisor goes)
		for _, f := range []string{helperPid, childPid} {
			if b, err := os.ReadFile(f); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && (rootProc{pid: pid}).alive() {
					syscall.Kill(pid, syscall.SIGKILL)
					awaitGone(t, rootProc{pid: pid})
				}
			}
		}
	})
	spec := execTask(t, root, "hung", "echo $$ > "+helperPid+"; sleep 1000 & echo $! > "+childPid+"; echo started; wait")
	ctx, cancel := context.WithCancel(testCtx(t))
	created := make(chan error, 1)
	go func() {
		_, err := c.CreateTask(ctx, spec)
		created <- err
	}()
	deadline := time.Now().Add(liveness)
	for { // until the command has started its child
		if lines, err := os.ReadFile(spec.LogPath); err == nil && strings.Contains(string(lines), "started") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command did not start")
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	assert.ErrorIs(t, <-created, context.Canceled)
	for _, f := range []string{helperPid, childPid} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		awaitGone(t, rootProc{pid: pid})
		assert.False(t, rootProc{pid: pid}.alive(), "%s: pid %d", f, pid)
	}
	_, err := c.State(testCtx(t), "hung")
	assert.ErrorIs(t, err, ErrNotFound)
}
