package procstat

import (
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0"
	for _, tc := range []struct {
		name, line string
		want       Stat
		err        string
	}{
		{
			name: "plain",
			line: "42 (sleep) S 7 42 42 0 -1 4194304 100 0 0 0 250 125" + tail,
			want: Stat{State: 'S', PPID: 7, CPU: 3750 * time.Millisecond},
		},
		{
			name: "command with spaces and parentheses",
			line: "42 (a) b (c) Z 1 42 42 0 -1 4194304 100 0 0 0 1 2" + tail,
			want: Stat{State: 'Z', PPID: 1, CPU: 30 * time.Millisecond},
		},
		{name: "no command", line: "42 sleep S 7", err: "no command name"},
		{name: "short", line: "42 (sleep) S 7 42", err: "short stat line"},
		{name: "bad ppid", line: "42 (sleep) S x 42 42 0 -1 4194304 100 0 0 0 1 2" + tail, err: "ppid"},
		{name: "bad utime", line: "42 (sleep) S 7 42 42 0 -1 4194304 100 0 0 0 x 2" + tail, err: "utime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.line))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseMemory(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Memory
		err        string
	}{
		{
			name: "rollup",
			text: "55d0c0000000-7ffc00000000 ---p 00000000 00:00 0 [rollup]\n" +
				"Rss:                1000 kB\nPss:                 600 kB\nPss_Anon:            300 kB\n" +
				"Shared_Clean:        400 kB\nShared_Dirty:          0 kB\nPrivate_Clean:       100 kB\n" +
				"Private_Dirty:       500 kB\nAnonymous:           300 kB\n",
			want: Memory{RSS: 1000 << 10, PSS: 600 << 10, Anon: 300 << 10,
				PrivateClean: 100 << 10, PrivateDirty: 500 << 10, SharedClean: 400 << 10},
		},
		{name: "empty (kernel thread)", text: "", err: "no resident memory"},
		{name: "bad number", text: "Rss: many kB\n", err: "Rss: many kB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMemory(strings.NewReader(tc.text))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, uint64(600<<10), got.Private())
		})
	}
}

func TestMemoryAdd(t *testing.T) {
	a := Memory{RSS: 1, PSS: 2, Anon: 3, PrivateClean: 4, PrivateDirty: 5, SharedClean: 6}
	assert.Equal(t, Memory{RSS: 2, PSS: 4, Anon: 6, PrivateClean: 8, PrivateDirty: 10, SharedClean: 12}, a.Add(a))
	assert.Equal(t, a, Memory{}.Add(a))
}

// startChild starts a sleeping child process, killed and reaped at the
// end of the test.
func startChild(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestLiveProcesses(t *testing.T) {
	child := startChild(t).Process.Pid
	for _, tc := range []struct {
		name string
		pid  int
		ppid int
	}{
		{name: "self", pid: os.Getpid(), ppid: os.Getppid()},
		{name: "child", pid: child, ppid: os.Getpid()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ReadStat(tc.pid)
			require.NoError(t, err)
			assert.Equal(t, tc.ppid, st.PPID)
			assert.Contains(t, "RSD", string(st.State))
			assert.GreaterOrEqual(t, CPU(tc.pid), time.Duration(0))

			m, err := ReadMemory(tc.pid)
			require.NoError(t, err)
			assert.Positive(t, m.RSS)
			assert.Positive(t, m.PSS)
			assert.LessOrEqual(t, m.PSS, m.RSS)
			assert.LessOrEqual(t, m.Private(), m.RSS)
		})
	}

	kids, err := Children(os.Getpid())
	require.NoError(t, err)
	assert.Contains(t, kids, child)
}

func TestSelfCPU(t *testing.T) {
	before := SelfCPU()
	// Spin until the clock of this process moves.
	deadline := time.Now().Add(time.Minute)
	for SelfCPU() == before && time.Now().Before(deadline) {
	}
	assert.Greater(t, SelfCPU(), before)
	assert.Positive(t, CPU(os.Getpid())+SelfCPU())
}

func TestGoneAndZombie(t *testing.T) {
	cmd := startChild(t)
	pid := cmd.Process.Pid
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))

	// Killed but not reaped: a zombie without memory.
	require.Eventually(t, func() bool {
		st, err := ReadStat(pid)
		return err == nil && st.State == 'Z'
	}, time.Minute, 10*time.Millisecond)
	_, err := ReadMemory(pid)
	assert.Error(t, err)

	_ = cmd.Wait()
	_, err = ReadStat(pid)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = ReadMemory(pid)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Zero(t, CPU(pid))
	assert.Zero(t, CPU(0))
	assert.Zero(t, CPU(-1))
}

func TestReadLoadAvg(t *testing.T) {
	l, err := ReadLoadAvg()
	require.NoError(t, err)
	for _, v := range []string{l.One, l.Five, l.Fifteen} {
		assert.Regexp(t, `^\d+\.\d+$`, v)
	}
	assert.Equal(t, l.One+" "+l.Five+" "+l.Fifteen, l.String())
}
