package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// liveness bounds waits for things that must happen; a test fails rather
// than hangs when they do not.
const liveness = 30 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	t.Cleanup(cancel)
	return ctx
}

// newRoot makes a runtime root whose processes (supervisor, tasks) are
// killed and reaped when the test ends, and checks that none is left.
func newRoot(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	t.Cleanup(func() { cleanupRoot(t, root) })
	return root
}

func connect(t testing.TB, root string, opts ...Option) *Client {
	t.Helper()
	c, err := Connect(testCtx(t), root, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// shTask is a KindNative task running script with /bin/sh, logging to
// <root>/logs/<id>.log.
func shTask(t testing.TB, root, id, script string) TaskSpec {
	t.Helper()
	dir := filepath.Join(root, "bundles", id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "config.json")
	writeProcessSpec(t, path, []string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin"})
	return TaskSpec{ID: id, Kind: KindNative, LogPath: filepath.Join(root, "logs", id+".log"),
		Native: &NativeSpec{SpecPath: path, StateDir: dir}, Labels: map[string]string{"test": t.Name()}}
}

// writeProcessSpec writes an OCI spec with just a process, what
// testLauncher runs.
func writeProcessSpec(t testing.TB, path string, args, env []string) {
	t.Helper()
	spec := specs.Spec{Version: specs.Version, Process: &specs.Process{Args: args, Env: env, Cwd: "/"}}
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// fifo makes a named pipe in root; a task blocks on `read x < fifo` until
// release writes to it.
func fifo(t testing.TB, root, name string) string {
	t.Helper()
	p := filepath.Join(root, name)
	require.NoError(t, unix.Mkfifo(p, 0o600))
	return p
}

func release(t testing.TB, path string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // blocks until the task reads
		if err == nil {
			_, err = f.WriteString("go\n")
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(liveness):
		t.Fatalf("nobody reads %s", path)
	}
}

// logLines returns "<stream> <tag> <text>" of each CRI log line, checking
// the timestamps.
func logLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		ts, rest, ok := strings.Cut(line, " ")
		require.True(t, ok, "log line %q", line)
		_, err := time.Parse(time.RFC3339Nano, ts)
		require.NoError(t, err, "log line %q", line)
		out = append(out, rest)
	}
	return out
}

// rootProc is a process that belongs to a test root.
type rootProc struct {
	pid   int
	start uint64 // 0: any
}

// rootProcs finds the supervisor and the tasks of root: from the pid file
// and task records, and every process whose command line names root.
func rootProcs(root string) []rootProc {
	var out []rootProc
	if b, err := os.ReadFile(filepath.Join(root, pidName)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			out = append(out, rootProc{pid: pid})
		}
	}
	recs, _ := filepath.Glob(filepath.Join(root, tasksDir, "*", taskFile))
	for _, p := range recs {
		var rec taskRecord
		if readJSON(p, &rec) == nil && rec.Pid > 0 {
			out = append(out, rootProc{pid: rec.Pid, start: rec.StartTime})
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(root)) {
			out = append(out, rootProc{pid: pid})
		}
	}
	return out
}

// alive: the process exists (a zombie counts: it must still be reaped).
func (p rootProc) alive() bool {
	st, err := readProcStat(p.pid)
	return err == nil && (p.start == 0 || st.start == p.start)
}

// cleanupRoot kills the tasks first (while their supervisor can reap
// them), then the supervisor, reaps whatever was reparented to the test
// process, and fails the test if anything is left.
func cleanupRoot(t testing.TB, root string) {
	procs := rootProcs(root)
	var sup []rootProc
	var tasks []rootProc
	for _, p := range procs {
		if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); bytes.HasPrefix(cmd, []byte(procTitle+"\x00")) {
			sup = append(sup, p)
		} else {
			tasks = append(tasks, p)
		}
	}
	for _, group := range [][]rootProc{tasks, sup} {
		for _, p := range group {
			if p.alive() {
				unix.Kill(p.pid, unix.SIGKILL)
			}
		}
		for _, p := range group {
			awaitGone(t, p)
		}
	}
	for _, p := range rootProcs(root) {
		if p.alive() {
			t.Errorf("process %d of %s is left behind", p.pid, root)
		}
	}
	// The supervisor's own failures (and, under -race, its data races)
	// are only in its log.
	if log, err := os.ReadFile(filepath.Join(root, logName)); err == nil {
		for _, bad := range []string{"DATA RACE", "panic:", "fatal error:"} {
			if bytes.Contains(log, []byte(bad)) {
				t.Errorf("supervisor log has %q:\n%s", bad, log)
			}
		}
	}
}

// awaitGone waits until p no longer exists, reaping it when it is a
// zombie child of the test process.
func awaitGone(t testing.TB, p rootProc) {
	deadline := time.Now().Add(liveness)
	for p.alive() {
		if st, err := readProcStat(p.pid); err == nil && st.state == 'Z' && st.ppid == os.Getpid() {
			var ws unix.WaitStatus
			unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
			continue
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d did not go away", p.pid)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitExit waits for a process (the supervisor) to exit and be reaped.
func awaitExit(t testing.TB, pid int) {
	t.Helper()
	awaitGone(t, rootProc{pid: pid})
	require.False(t, rootProc{pid: pid}.alive(), "process %d still exists", pid)
}
