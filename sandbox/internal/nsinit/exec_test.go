package nsinit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// running starts a container that sleeps until killed.
func running(t *testing.T, spec *specs.Spec) *container {
	t.Helper()
	c, err := create(t, spec, nil)
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	return c
}

func execIn(t *testing.T, c *container, p *specs.Process) (string, string, int, error) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := Exec(context.Background(), ExecConfig{Pid: c.pid, Process: p, Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), code, err
}

func boxProcess(args ...string) *specs.Process {
	return &specs.Process{
		Args: append([]string{boxPath}, args...),
		Env:  []string{"PATH=/bin"},
		Cwd:  "/",
		Capabilities: &specs.LinuxCapabilities{
			Bounding: defaultCaps, Effective: defaultCaps, Permitted: defaultCaps,
		},
	}
}

func TestExec(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "sleep", "inf")
	spec.Hostname = "exec-target"
	c := running(t, spec)

	t.Run("hostname", func(t *testing.T) {
		out, _, code, err := execIn(t, c, boxProcess("hostname"))
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.Equal(t, "exec-target\n", out)
	})
	t.Run("PID namespace", func(t *testing.T) {
		out, _, code, err := execIn(t, c, boxProcess("ps"))
		require.NoError(t, err)
		require.Equal(t, 0, code)
		ps := lines(out)
		assert.Len(t, ps, 2, "the entrypoint and the exec'd process: %v", ps)
		assert.Contains(t, ps, "1")
	})
	t.Run("files", func(t *testing.T) {
		out, _, code, err := execIn(t, c, boxProcess("cat", "/etc/marker"))
		require.NoError(t, err)
		require.Equal(t, 0, code)
		assert.Equal(t, "from-the-image\n", out)
	})
	t.Run("exit code", func(t *testing.T) {
		_, _, code, err := execIn(t, c, boxProcess("exit", "3"))
		require.NoError(t, err)
		assert.Equal(t, 3, code)
	})
	t.Run("stderr", func(t *testing.T) {
		_, stderr, code, err := execIn(t, c, boxProcess("cat", "/nope"))
		require.NoError(t, err)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "no such file or directory")
	})
	t.Run("user, cwd and env", func(t *testing.T) {
		p := boxProcess("id")
		p.User = specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{5}}
		out, _, code, err := execIn(t, c, p)
		require.NoError(t, err)
		require.Equal(t, 0, code)
		assert.Equal(t, "uid=1000 gid=1000 groups=5\n", out)

		p = boxProcess("pwd")
		p.Cwd = "/etc"
		out, _, _, err = execIn(t, c, p)
		require.NoError(t, err)
		assert.Equal(t, "/etc\n", out)

		p = boxProcess("env")
		p.Env = []string{"PATH=/bin", "X=y"}
		out, _, _, err = execIn(t, c, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"PATH=/bin", "X=y", "HOME=/root"}, lines(out))
	})
	t.Run("no_new_privs and capabilities", func(t *testing.T) {
		p := boxProcess("caps")
		p.NoNewPrivileges = true
		p.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_KILL"}, Effective: []string{"CAP_KILL"}, Permitted: []string{"CAP_KILL"}}
		out, _, _, err := execIn(t, c, p)
		require.NoError(t, err)
		assert.Contains(t, lines(out), "NoNewPrivs=1")
		assert.Contains(t, lines(out), "CapEff=0000000000000020")
	})
	t.Run("missing binary", func(t *testing.T) {
		p := boxProcess()
		p.Args = []string{"nope"}
		_, _, code, err := execIn(t, c, p)
		require.ErrorIs(t, err, ErrExec)
		assert.Contains(t, err.Error(), `exec: "nope": executable file not found in $PATH`)
		assert.Equal(t, ExitNotFound, code)
	})
	t.Run("bad cwd", func(t *testing.T) {
		p := boxProcess("pwd")
		p.Cwd = "/does/not/exist"
		_, _, _, err := execIn(t, c, p)
		require.ErrorIs(t, err, ErrSetup)
		assert.Contains(t, err.Error(), "/does/not/exist")
	})
	t.Run("context cancellation kills it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() {
			_, err := Exec(ctx, ExecConfig{Pid: c.pid, Process: boxProcess("sleep", "inf"), Stdout: &out})
			done <- err
		}()
		// Cancel once the command runs inside the container.
		require.Eventually(t, func() bool {
			o, _, _, _ := execIn(t, c, boxProcess("ps"))
			return len(lines(o)) == 3
		}, 10*time.Second, 10*time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		o, _, _, err := execIn(t, c, boxProcess("ps"))
		require.NoError(t, err)
		assert.Len(t, lines(o), 2, "the cancelled command is gone: %s", strings.Join(lines(o), ","))
	})
}

func TestExecNotRunning(t *testing.T) {
	_, err := Exec(context.Background(), ExecConfig{Pid: 1 << 30, Process: boxProcess("pid")})
	require.Error(t, err)
	_, err = Exec(context.Background(), ExecConfig{Pid: 1, Process: &specs.Process{}})
	require.ErrorIs(t, err, ErrInvalidSpec)
}
