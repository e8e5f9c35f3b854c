package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestParseProcStat(t *testing.T) {
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 4242 19 20"
	for _, tc := range []struct {
		name, in string
		want     procStat
		err      bool
	}{
		{"plain", "12 (sleep) S 7" + tail, procStat{state: 'S', ppid: 7, start: 4242}, false},
		{"spaces and parens in comm", "12 (a b) c)) Z 1" + tail, procStat{state: 'Z', ppid: 1, start: 4242}, false},
		{"truncated", "12 (sleep) S 7 1 2", procStat{}, true},
		{"no comm", "12 sleep S 7" + tail, procStat{}, true},
		{"bad ppid", "12 (x) S x" + tail, procStat{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tc.in))
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	self, err := readProcStat(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), self.ppid)
	assert.Positive(t, self.start)
}

func TestReadOOMKills(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                uint64
		err                 bool
	}{
		{"v2", "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n", 2, false},
		{"v1", "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n", 5, false},
		{"v1 old kernel", "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n", 0, true},
		{"no file", "other", "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			got, err := readOOMKills(dir)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	dir := t.TempDir()
	events := filepath.Join(dir, "memory.events")
	require.NoError(t, os.WriteFile(events, []byte("oom_kill 1\n"), 0o644))
	base := uint64(1)
	rec := &taskRecord{MemoryCgroupDir: dir, OOMBase: &base}
	assert.False(t, oomGrew(rec))
	require.NoError(t, os.WriteFile(events, []byte("oom_kill 2\n"), 0o644))
	assert.True(t, oomGrew(rec))
	assert.False(t, oomGrew(&taskRecord{MemoryCgroupDir: dir}), "no base: never")
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		ws   unix.WaitStatus
		code int32
		sig  int
		desc string
	}{
		{0, 0, 0, "exited with status 0"},
		{3 << 8, 3, 0, "exited with status 3"},
		{unix.WaitStatus(syscall.SIGKILL), 137, 9, "killed by signal killed"},
		{unix.WaitStatus(syscall.SIGTERM) | 0x80, 143, 15, "killed by signal terminated"}, // core dumped
	} {
		code, sig := exitStatus(tc.ws)
		assert.Equal(t, tc.code, code)
		assert.Equal(t, tc.sig, sig)
		assert.Equal(t, tc.desc, describeStatus(tc.ws))
	}
}

func TestWireErrors(t *testing.T) {
	for _, sentinel := range []error{ErrNotFound, ErrAlreadyExists, ErrInvalid, ErrRunning, ErrExited, context.Canceled} {
		w := toWire(fmt.Errorf("task %q: %w", "x", sentinel))
		err := w.err()
		assert.ErrorIs(t, err, sentinel)
		assert.Equal(t, `task "x": `+sentinel.Error(), err.Error())
	}
	err := toWire(errors.New("plain")).err()
	assert.EqualError(t, err, "plain")
	assert.NotErrorIs(t, err, ErrNotFound)
	assert.Nil(t, toWire(nil))
}

func TestValidate(t *testing.T) {
	native := &NativeSpec{SpecPath: "/b/config.json"}
	exec := &ExecSpec{Argv: []string{"runc", "create"}, PidFile: "/b/pid"}
	for _, tc := range []struct {
		name string
		spec TaskSpec
		ok   bool
	}{
		{"native", TaskSpec{ID: "c1", Kind: KindNative, Native: native}, true},
		{"exec", TaskSpec{ID: "c1", Kind: KindExec, Exec: exec, LogPath: "/l/0.log"}, true},
		{"empty id", TaskSpec{Kind: KindNative, Native: native}, false},
		{"dot id", TaskSpec{ID: ".", Kind: KindNative, Native: native}, false},
		{"path id", TaskSpec{ID: "../x", Kind: KindNative, Native: native}, false},
		{"long id", TaskSpec{ID: strings.Repeat("x", 201), Kind: KindNative, Native: native}, false},
		{"kind mismatch", TaskSpec{ID: "c1", Kind: KindExec, Native: native}, false},
		{"exec without argv", TaskSpec{ID: "c1", Kind: KindExec, Exec: &ExecSpec{PidFile: "/p"}}, false},
		{"relative log", TaskSpec{ID: "c1", Kind: KindNative, Native: native, LogPath: "l.log"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalid)
			}
		})
	}
}

func TestFileSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "0.log")
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	s, err := openSink(path, func() time.Time { return now })
	require.NoError(t, err)
	out, errw := s.Stream(stdoutStream), s.Stream(stderrStream)
	for _, w := range []string{"hel", "lo\nwor", "ld\n\n", "x"} {
		_, err := out.Write([]byte(w))
		require.NoError(t, err)
	}
	errw.Write([]byte("oops\n"))
	long := strings.Repeat("a", maxLogLine+10)
	errw.Write([]byte(long + "\n"))
	require.NoError(t, out.Close())
	require.NoError(t, errw.Close())
	require.NoError(t, s.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	ts := "2026-01-02T03:04:05.000006Z "
	assert.Equal(t, ts+"stdout F hello\n"+ts+"stdout F world\n"+ts+"stdout F \n"+ts+"stderr F oops\n"+
		ts+"stderr P "+long[:maxLogLine]+"\n"+ts+"stderr F "+long[maxLogLine:]+"\n"+ts+"stdout P x\n", string(data))

	d, err := openSink("", time.Now)
	require.NoError(t, err)
	n, err := d.Stream(stdoutStream).Write([]byte("gone"))
	assert.Equal(t, 4, n)
	assert.NoError(t, err)
}

func TestWriteJSONAtomic(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeJSONAtomic(dir, exitFile, &exitRecord{ExitCode: 3}))
	require.NoError(t, writeJSONAtomic(dir, exitFile, &exitRecord{ExitCode: 4, Message: "m"}))
	var got exitRecord
	require.NoError(t, readJSON(filepath.Join(dir, exitFile), &got))
	assert.Equal(t, exitRecord{ExitCode: 4, Message: "m"}, got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")
}

func TestOptions(t *testing.T) {
	_, err := Connect(context.Background(), t.TempDir(), WithIdleExit(-time.Second))
	assert.Error(t, err)
	_, err = Connect(context.Background(), t.TempDir(), WithBinary(""))
	assert.Error(t, err)
	_, err = Connect(context.Background(), "/tmp/"+strings.Repeat("x", 120))
	assert.ErrorContains(t, err, "longer than a unix socket allows")
	root := t.TempDir()
	_, err = Connect(context.Background(), root, WithBinary("/bin/false"))
	assert.ErrorContains(t, err, "did not start")
	_, err = Connect(context.Background(), root, WithBinary(filepath.Join(root, "missing")))
	assert.Error(t, err)
}
