package nsinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/internal/testutil"
)

// startPause starts a pause in a fresh network namespace; it is killed and
// reaped at cleanup unless the test reaped it.
func startPause(t *testing.T, useGo bool) (pid int, netPath string, reaped *bool) {
	t.Helper()
	testutil.RequireRoot(t)
	ns, err := netns.New(t.TempDir(), fmt.Sprintf("nsinit-pause-%d", os.Getpid()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ns.Remove()) })
	pid, err = StartPause(context.Background(), PauseConfig{NetNS: ns.Path(), StateDir: t.TempDir(), UseGo: useGo})
	require.NoError(t, err)
	reaped = new(bool)
	t.Cleanup(func() {
		if !*reaped {
			_ = unix.Kill(pid, unix.SIGKILL)
			_, _ = unix.Wait4(pid, nil, 0, nil)
		}
	})
	return pid, ns.Path(), reaped
}

func TestPause(t *testing.T) {
	for _, useGo := range []bool{false, true} {
		t.Run(fmt.Sprintf("go=%v", useGo), func(t *testing.T) {
			r := newRootfs(t)
			pause, netPath, reaped := startPause(t, useGo)

			// The pause is PID 1 of its namespace, which a container
			// joins (with the pod's network namespace).
			joined := func(args ...string) *specs.Spec {
				s := testSpec(r.path, args...)
				setNamespace(s, specs.PIDNamespace, fmt.Sprintf("/proc/%d/ns/pid", pause), false)
				setNamespace(s, specs.NetworkNamespace, netPath, false)
				return s
			}
			out, status := run(t, joined("ps"))
			require.Equal(t, 0, status)
			assert.Contains(t, lines(out), "1")
			out, _ = run(t, joined("pid"))
			assert.NotEqual(t, "1\n", out, "the container is not PID 1 in a shared namespace")
			var want, got unix.Stat_t
			require.NoError(t, unix.Stat(netPath, &want))
			require.NoError(t, unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pause), &got))
			assert.Equal(t, want.Ino, got.Ino, "the pause joined the pod's network namespace")

			// An orphan is reparented to the pause, which reaps it once
			// it exits (when the test creates /tmp/release).
			out, status = run(t, joined("orphan", "/tmp/release"))
			require.Equal(t, 0, status)
			require.Len(t, lines(out), 1)
			orphan := hostPIDOfChild(t, pause)
			require.NotZero(t, orphan, "the orphan was reparented to the pause")
			require.NoError(t, os.WriteFile(filepath.Join(r.path, "tmp/release"), nil, 0o644))
			require.Eventually(t, func() bool {
				_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
				return errors.Is(err, os.ErrNotExist)
			}, 20*time.Second, 20*time.Millisecond, "orphan %d exited and was reaped (no zombie)", orphan)

			// SIGTERM ends the pause with status 0.
			require.NoError(t, unix.Kill(pause, unix.SIGTERM))
			var ws unix.WaitStatus
			_, err := unix.Wait4(pause, &ws, 0, nil)
			require.NoError(t, err)
			*reaped = true
			assert.True(t, ws.Exited(), "status %v", ws)
			assert.Equal(t, 0, ws.ExitStatus())
		})
	}
}

// hostPIDOfChild returns one child of pid (its host PID), or 0.
func hostPIDOfChild(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	require.NoError(t, err)
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			return n
		}
	}
	return 0
}

func TestPauseMemory(t *testing.T) {
	if pauseELF() == nil {
		t.Skip("no tiny pause on this architecture")
	}
	pause, _, _ := startPause(t, false)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pause))
	require.NoError(t, err)
	var rssKB int
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rssKB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	t.Logf("pause RSS: %d kB", rssKB)
	assert.Less(t, rssKB, 2048, "a pause must cost well under 2 MiB")
}
