package supervisor

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestSupervisorIsDetachedSubreaper(t *testing.T) {
	root := newRoot(t)
	c := connect(t, root)
	require.NotEqual(t, os.Getpid(), c.Pid())
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid()) + "/cmdline")
	require.NoError(t, err)
	assert.Equal(t, procTitle+"\x00"+root+"\x00", string(cmd))
	sid, err := unix.Getsid(c.Pid())
	require.NoError(t, err)
	assert.Equal(t, c.Pid(), sid, "the supervisor leads its own session")
	status, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid()) + "/status")
	require.NoError(t, err)
	assert.Contains(t, string(status), "\nPPid:\t"+strconv.Itoa(os.Getpid())+"\n")
	pidFile, err := os.ReadFile(filepath.Join(root, pidName))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(c.Pid())+"\n", string(pidFile))
	fi, err := os.Stat(filepath.Join(root, sockName))
	require.NoError(t, err)
	assert.Zero(t, fi.Mode().Perm()&0o077, "socket for its owner only: %v", fi.Mode())
}

// A client (the kubelet) dies without closing; its task keeps running
// and writing its log, and a new client learns its exit code.
func TestClientDiesTaskSurvives(t *testing.T) {
	root := newRoot(t)
	gate := fifo(t, root, "gate")
	spec := shTask(t, root, "survivor", "echo before; read x < "+gate+"; echo after; exit 7")
	job, err := json.Marshal(clientJob{Root: root, Spec: spec})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envTestClient+"="+string(job))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "client: %s", stderr.String())
	var created TaskState
	require.NoError(t, json.Unmarshal(out, &created))

	c := connect(t, root)
	ctx := testCtx(t)
	list, err := c.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "survivor", list[0].ID)
	assert.Equal(t, created.Pid, list[0].Pid)
	assert.False(t, list[0].Exited)
	assert.False(t, list[0].Orphaned)

	release(t, gate)
	st, err := c.Wait(ctx, "survivor")
	require.NoError(t, err)
	assert.Equal(t, int32(7), st.ExitCode)
	assert.Equal(t, []string{"stdout F before", "stdout F after"}, logLines(t, spec.LogPath))
}

func TestConcurrentConnectStartsOneSupervisor(t *testing.T) {
	root := newRoot(t)
	const n = 4
	pids := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Connect(testCtx(t), root)
			if assert.NoError(t, err) {
				pids[i] = c.Pid()
				t.Cleanup(func() { c.Close() })
			}
		}()
	}
	wg.Wait()
	for i := range n {
		assert.Equal(t, pids[0], pids[i])
	}
	sups := map[int]bool{}
	for _, p := range rootProcs(root) {
		if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); bytes.HasPrefix(cmd, []byte(procTitle+"\x00")) && p.alive() {
			sups[p.pid] = true
		}
	}
	assert.Len(t, sups, 1, "one supervisor process for the root")
}

func TestIdleExit(t *testing.T) {
	root := newRoot(t)
	ctx := testCtx(t)
	c := connect(t, root, WithIdleExit(50*time.Millisecond))
	_, err := c.CreateTask(ctx, shTask(t, root, "quick", "exit 5"))
	require.NoError(t, err)
	_, err = c.Wait(ctx, "quick")
	require.NoError(t, err)
	first := c.Pid()
	require.NoError(t, c.Close())
	_, err = c.List(ctx)
	assert.ErrorIs(t, err, ErrClosed, "a closed client stays closed")
	awaitExit(t, first)
	assert.NoFileExists(t, filepath.Join(root, sockName))
	assert.NoFileExists(t, filepath.Join(root, pidName))

	// The exit outlives the supervisor: it is on disk.
	c = connect(t, root, WithIdleExit(50*time.Millisecond))
	require.NotEqual(t, first, c.Pid())
	st, err := c.State(ctx, "quick")
	require.NoError(t, err)
	assert.True(t, st.Exited)
	assert.Equal(t, int32(5), st.ExitCode)
	assert.False(t, st.Orphaned)

	// A running task keeps it alive without clients.
	gate := fifo(t, root, "gate")
	_, err = c.CreateTask(ctx, shTask(t, root, "slow", "read x < "+gate))
	require.NoError(t, err)
	second := c.Pid()
	require.NoError(t, c.Close())
	time.Sleep(10 * 50 * time.Millisecond) // ten idle periods
	c = connect(t, root, WithIdleExit(50*time.Millisecond))
	assert.Equal(t, second, c.Pid(), "still the same supervisor")
	release(t, gate)
	_, err = c.Wait(ctx, "slow")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	awaitExit(t, second)
}

// SIGKILL of the supervisor: a new one reloads the records. Exited tasks
// keep their codes; a still running task is an orphan; a task that died
// meanwhile exited with an unknown code.
func TestSupervisorKilledReloads(t *testing.T) {
	root := newRoot(t)
	ctx := testCtx(t)
	c := connect(t, root)
	_, err := c.CreateTask(ctx, shTask(t, root, "a-exited", "exit 3"))
	require.NoError(t, err)
	_, err = c.Wait(ctx, "a-exited")
	require.NoError(t, err)
	gate := fifo(t, root, "gate")
	b, err := c.CreateTask(ctx, shTask(t, root, "b-orphan", "read x < "+gate+"; exit 7"))
	require.NoError(t, err)
	cst, err := c.CreateTask(ctx, shTask(t, root, "c-dies", "exec sleep 1000"))
	require.NoError(t, err)

	events, err := c.Events(ctx)
	require.NoError(t, err)
	first := c.Pid()
	require.NoError(t, unix.Kill(first, unix.SIGKILL))
	awaitExit(t, first)
	for range events { // closed: the connection is lost
	}
	// The tasks were reparented to the nearest subreaper: this test.
	require.NoError(t, unix.Kill(cst.Pid, unix.SIGKILL))
	awaitGone(t, rootProc{pid: cst.Pid})

	// The client reconnects by itself, starting a new supervisor.
	list, err := c.List(ctx)
	require.NoError(t, err)
	require.NotEqual(t, first, c.Pid())
	require.Len(t, list, 3)
	a, bo, cd := list[0], list[1], list[2]
	assert.True(t, a.Exited)
	assert.Equal(t, int32(3), a.ExitCode)
	assert.False(t, a.Orphaned)
	assert.Empty(t, a.Message)

	assert.False(t, bo.Exited)
	assert.True(t, bo.Orphaned)
	assert.Equal(t, b.Pid, bo.Pid)

	assert.True(t, cd.Exited)
	assert.Equal(t, int32(255), cd.ExitCode)
	assert.True(t, cd.Orphaned)
	assert.Equal(t, msgUnknownExit, cd.Message)

	// The orphan is still watched: its exit is noticed, not its code.
	events, err = c.Events(ctx)
	require.NoError(t, err)
	release(t, gate)
	ev := <-events
	assert.Equal(t, "b-orphan", ev.ID)
	st, err := c.Wait(ctx, "b-orphan")
	require.NoError(t, err)
	assert.True(t, st.Exited)
	assert.Equal(t, int32(255), st.ExitCode)
	assert.True(t, st.Orphaned)
	assert.Equal(t, msgUnknownExit, st.Message)
	assert.Equal(t, ev, st)
	awaitGone(t, rootProc{pid: b.Pid})

	// The new supervisor works normally, and a second restart keeps all
	// the answers.
	_, err = c.CreateTask(ctx, shTask(t, root, "d-new", "exit 6"))
	require.NoError(t, err)
	_, err = c.Wait(ctx, "d-new")
	require.NoError(t, err)
	second := c.Pid()
	require.NoError(t, unix.Kill(second, unix.SIGKILL))
	awaitExit(t, second)
	c = connect(t, root)
	list, err = c.List(ctx)
	require.NoError(t, err)
	codes := map[string]int32{}
	for _, st := range list {
		codes[st.ID] = st.ExitCode
	}
	assert.Equal(t, map[string]int32{"a-exited": 3, "b-orphan": 255, "c-dies": 255, "d-new": 6}, codes)
}

// An orphan can still be signalled and force-deleted.
func TestOrphanSignalAndDelete(t *testing.T) {
	root := newRoot(t)
	ctx := testCtx(t)
	c := connect(t, root)
	st, err := c.CreateTask(ctx, shTask(t, root, "orphan", "exec sleep 1000"))
	require.NoError(t, err)
	require.NoError(t, unix.Kill(c.Pid(), unix.SIGKILL))
	awaitExit(t, c.Pid())

	c = connect(t, root)
	got, err := c.State(ctx, "orphan")
	require.NoError(t, err)
	require.True(t, got.Orphaned)
	require.False(t, got.Exited)
	require.NoError(t, c.Signal(ctx, "orphan", syscall.SIGTERM))
	got, err = c.Wait(ctx, "orphan")
	require.NoError(t, err)
	assert.Equal(t, int32(255), got.ExitCode)
	awaitGone(t, rootProc{pid: st.Pid})
	require.NoError(t, c.Delete(ctx, "orphan"))
	_, err = c.State(ctx, "orphan")
	assert.ErrorIs(t, err, ErrNotFound)
}

// A Wait in flight when the supervisor dies is retried on a new one.
func TestWaitRetriedAcrossSupervisorDeath(t *testing.T) {
	root := newRoot(t)
	ctx := testCtx(t)
	c := connect(t, root)
	st, err := c.CreateTask(ctx, shTask(t, root, "long", "exec sleep 1000"))
	require.NoError(t, err)
	first := c.Pid()
	waited := make(chan TaskState, 1)
	go func() {
		got, err := c.Wait(ctx, "long")
		assert.NoError(t, err)
		waited <- got
	}()
	require.NoError(t, unix.Kill(first, unix.SIGKILL))
	awaitExit(t, first)
	require.NoError(t, unix.Kill(st.Pid, unix.SIGKILL))
	awaitGone(t, rootProc{pid: st.Pid})
	got := <-waited
	assert.True(t, got.Exited)
	assert.Equal(t, int32(255), got.ExitCode)
	assert.True(t, got.Orphaned)
	assert.NotEqual(t, first, c.Pid())
}

// A supervisor whose idle exit begins just as a client connects closes the
// connection unanswered and removes its socket: the client retries and
// starts a new supervisor instead of failing.
func TestConnectRetriesASupervisorExitingDuringHello(t *testing.T) {
	root := newRoot(t)
	sock := filepath.Join(root, sockName)
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		nc, err := l.Accept()
		if err != nil {
			return
		}
		nc.Close() // no hello: the idle exit won
		l.Close()  // removes the socket, as the exiting supervisor does
	}()
	c := connect(t, root, WithIdleExit(time.Minute))
	<-exited
	assert.NotZero(t, c.Pid(), "connected to a supervisor started after the first went away")
	_, err = c.List(testCtx(t))
	require.NoError(t, err)
}
