package oci_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox/native"
	"github.com/podkit/podkit/sandbox/oci"
)

// fakeScript is a stand-in OCI runtime for the tests that check command
// lines and error handling without root. It skips the global flags
// (remembering --log), records its arguments in $FAKE_CALLS, and for
// subcommand C obeys $FAKE_C_LOG (an error written to the JSON log),
// $FAKE_C_STDOUT, $FAKE_C_STDERR and $FAKE_C_EXIT. exec prints the
// process file it was given when $FAKE_exec_CAT is set, and leaves a
// process holding its output open, whose pid it writes to $FAKE_BG_PID,
// when that is set.
const fakeScript = `#!/bin/sh
[ -n "$FAKE_CALLS" ] && echo "$*" >> "$FAKE_CALLS"
log=/dev/null
while [ $# -gt 0 ]; do
	case "$1" in
	--version) echo "${FAKE_VERSION:-fake-oci version 0.1}"; echo "commit: fake"; exit 0;;
	--log) log=$2; shift 2;;
	--root|--log-format) shift 2;;
	--*) shift;;
	*) break;;
	esac
done
cmd=$1; shift
eval "msg=\$FAKE_${cmd}_LOG out=\$FAKE_${cmd}_STDOUT err=\$FAKE_${cmd}_STDERR code=\$FAKE_${cmd}_EXIT cat=\$FAKE_${cmd}_CAT"
echo '{"level":"info","msg":"fake here"}' >> "$log"
[ -n "$msg" ] && printf '{"level":"error","msg":"%s","time":"2026-01-01T00:00:00Z"}\n' "$msg" >> "$log"
[ -n "$out" ] && echo "$out"
[ -n "$err" ] && echo "$err" >&2
if [ -n "$FAKE_BG_PID" ] && [ "$cmd" = exec ]; then
	sleep 60 &
	echo $! > "$FAKE_BG_PID"
fi
if [ -n "$cat" ]; then
	while [ $# -gt 0 ]; do [ "$1" = --process ] && cat "$2"; shift; done
fi
exit ${code:-0}
`

// fake installs the fake runtime and returns its path and the file its
// calls are recorded in.
func fake(t *testing.T) (binary, calls string) {
	t.Helper()
	dir := t.TempDir()
	binary = filepath.Join(dir, "fake-oci")
	require.NoError(t, os.WriteFile(binary, []byte(fakeScript), 0o755))
	calls = filepath.Join(dir, "calls")
	t.Setenv("FAKE_CALLS", calls)
	return binary, calls
}

func newFake(t *testing.T, opts ...oci.Option) (*oci.Runtime, string) {
	t.Helper()
	bin, calls := fake(t)
	opts = append([]oci.Option{oci.WithRoot("/run/test-oci"), oci.WithTempDir(t.TempDir()), oci.WithCgroupRoot(t.TempDir())}, opts...)
	r, err := oci.New(bin, opts...)
	require.NoError(t, err)
	return r, calls
}

func lastCall(t *testing.T, calls string) string {
	t.Helper()
	b, err := os.ReadFile(calls)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func TestNewFlavors(t *testing.T) {
	for _, tc := range []struct {
		version, name string
		flavor        oci.Flavor
	}{
		{"runc version 1.1.5+ds1", "runc", oci.FlavorRunc},
		{"crun version 1.8.1", "crun", oci.FlavorCrun},
		{"youki version 0.3.0", "fake-oci", oci.FlavorOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, _ := fake(t)
			t.Setenv("FAKE_VERSION", tc.version)
			r, err := oci.New(bin, oci.WithCgroupRoot(t.TempDir()))
			require.NoError(t, err)
			assert.Equal(t, tc.flavor, r.Flavor())
			assert.Equal(t, tc.name, r.Name())
			assert.Equal(t, tc.version, r.Version())
			assert.Equal(t, bin, r.Binary())
			assert.Equal(t, filepath.Join(oci.DefaultRoot, tc.name), r.Root())
		})
	}
}

func TestNewErrors(t *testing.T) {
	bin, _ := fake(t)
	for name, tc := range map[string]struct {
		binary string
		opt    oci.Option
		want   error
	}{
		"missing binary":    {binary: "podkit-no-such-runtime", want: oci.ErrNotInstalled},
		"relative root":     {binary: bin, opt: oci.WithRoot("run/x"), want: oci.ErrInvalid},
		"relative temp dir": {binary: bin, opt: oci.WithTempDir("tmp"), want: oci.ErrInvalid},
		"bad name":          {binary: bin, opt: oci.WithName("a/b"), want: oci.ErrInvalid},
		"nil logger":        {binary: bin, opt: oci.WithLogger(nil), want: oci.ErrInvalid},
		"zero wait delay":   {binary: bin, opt: oci.WithWaitDelay(0), want: oci.ErrInvalid},
		"owned --root":      {binary: bin, opt: oci.WithGlobalArgs("--debug", "--root=/x"), want: oci.ErrInvalid},
		"owned --log":       {binary: bin, opt: oci.WithGlobalArgs("--log"), want: oci.ErrInvalid},
		"systemd cgroups":   {binary: bin, opt: oci.WithGlobalArgs("--systemd-cgroup"), want: oci.ErrInvalid},
		"cgroup manager":    {binary: bin, opt: oci.WithGlobalArgs("--cgroup-manager=systemd"), want: oci.ErrInvalid},
		"relative cgroups":  {binary: bin, opt: oci.WithCgroupRoot("sys"), want: oci.ErrInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			var opts []oci.Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			_, err := oci.New(tc.binary, opts...)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// A binary that is not runc is refused by Runc, with what it is.
func TestRuncChecksFlavor(t *testing.T) {
	bin, _ := fake(t)
	dir := filepath.Dir(bin)
	require.NoError(t, os.Rename(bin, filepath.Join(dir, "runc")))
	t.Setenv("PATH", dir)
	t.Setenv("FAKE_VERSION", "crun version 1.8.1")
	_, err := oci.Runc()
	require.ErrorIs(t, err, oci.ErrNotInstalled)
	assert.Contains(t, err.Error(), `says "crun version 1.8.1", not runc`)

	t.Setenv("PATH", t.TempDir())
	_, err = oci.Crun()
	require.ErrorIs(t, err, oci.ErrNotInstalled)
	assert.Contains(t, err.Error(), "crun is not installed")
}

func TestCreateCommand(t *testing.T) {
	b := &native.Bundle{ID: "c1", Dir: "/run/b/c1", PidFile: "/run/b/c1/pid"}
	r, _ := newFake(t, oci.WithGlobalArgs("--debug"))
	assert.Equal(t, []string{r.Binary(), "--root", "/run/test-oci", "--log", "/run/b/c1/fake-oci-create.log", "--log-format", "json",
		"--debug", "create", "--bundle", "/run/b/c1", "--pid-file", "/run/b/c1/pid", "c1"}, r.CreateCommand(b))

	t.Setenv("FAKE_VERSION", "crun version 1.8.1")
	c, _ := newFake(t, oci.WithName("crun-fast"))
	assert.Equal(t, []string{c.Binary(), "--root", "/run/test-oci", "--log", "/run/b/c1/crun-fast-create.log", "--log-format", "json",
		"--cgroup-manager=cgroupfs", "create", "--bundle", "/run/b/c1", "--pid-file", "/run/b/c1/pid", "c1"}, c.CreateCommand(b))
}

func TestStartError(t *testing.T) {
	r, calls := newFake(t)
	b := &native.Bundle{ID: "c1", Dir: t.TempDir()}
	require.NoError(t, r.Start(t.Context(), b))
	assert.Contains(t, lastCall(t, calls), "--log-format json start c1")

	t.Setenv("FAKE_start_LOG", "cannot start a container that has stopped")
	t.Setenv("FAKE_start_STDERR", "also on stderr")
	t.Setenv("FAKE_start_EXIT", "1")
	err := r.Start(t.Context(), b)
	var cerr *oci.CommandError
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, "fake-oci start c1: exit status 1: cannot start a container that has stopped", err.Error(),
		"the log, not stderr, is the message")
	assert.NotErrorIs(t, err, oci.ErrNotExist)

	// Without a log entry, stderr is the message.
	t.Setenv("FAKE_start_LOG", "")
	err = r.Start(t.Context(), b)
	assert.EqualError(t, err, "fake-oci start c1: exit status 1: also on stderr")
}

// crun's refusal of hybrid cgroups comes with the cure.
func TestHybridHint(t *testing.T) {
	r, _ := newFake(t)
	t.Setenv("FAKE_start_LOG", "cgroups in hybrid mode not supported, drop all controllers from cgroupv2")
	t.Setenv("FAKE_start_EXIT", "1")
	err := r.Start(t.Context(), &native.Bundle{ID: "c1"})
	require.ErrorIs(t, err, oci.ErrHybridCgroups)
	assert.Contains(t, err.Error(), "hint: crun needs every controller on a cgroup v1 hierarchy")

	// A failed create: the supervisor's error plus the create log.
	b := &native.Bundle{ID: "c2", Dir: t.TempDir()}
	log := filepath.Join(b.Dir, "fake-oci-create.log")
	require.NoError(t, os.WriteFile(log, []byte(`{"level":"error","msg":"cgroups in hybrid mode not supported, drop all controllers from cgroupv2"}`+"\n"), 0o644))
	supErr := errors.New(`create task "c2": /usr/bin/crun exit status 1: cgroups in hybrid mode not supported, drop all controllers from cgroupv2`)
	err = r.CreateError(b, supErr)
	require.ErrorIs(t, err, oci.ErrHybridCgroups)
	require.ErrorIs(t, err, supErr)
	assert.Contains(t, err.Error(), "mount -t cgroup -o <controller> cgroup")

	require.NoError(t, os.WriteFile(log, []byte(`{"level":"error","msg":"something only logged"}`+"\n"), 0o644))
	err = r.CreateError(b, errors.New("create task: exit status 1"))
	assert.EqualError(t, err, "create task: exit status 1 (fake-oci logged: something only logged)")
	assert.NoError(t, r.CreateError(b, nil))
}

func TestExecFake(t *testing.T) {
	r, calls := newFake(t)
	b := &native.Bundle{ID: "c1", Dir: t.TempDir()}
	p := &specs.Process{Args: []string{"/bin/echo", "hi"}, Env: []string{"SECRET=1"}, Cwd: "/"}

	t.Setenv("FAKE_exec_CAT", "1")
	t.Setenv("FAKE_exec_STDERR", "to stderr")
	t.Setenv("FAKE_exec_EXIT", "7")
	var stdout, stderr bytes.Buffer
	code, err := r.Exec(t.Context(), b, p, &stdout, &stderr)
	require.NoError(t, err)
	assert.Equal(t, 7, code, "the command's exit status")
	assert.JSONEq(t, `{"args":["/bin/echo","hi"],"env":["SECRET=1"],"cwd":"/","user":{"uid":0,"gid":0}}`, stdout.String())
	assert.Equal(t, "to stderr\n", stderr.String())
	assert.Regexp(t, `exec --process \S+/process.json --pid-file \S+/pid c1$`, lastCall(t, calls))

	// The runtime itself failed: an error, whatever the exit status.
	t.Setenv("FAKE_exec_CAT", "")
	t.Setenv("FAKE_exec_LOG", `exec failed: unable to start container process: exec: \"nope\": executable file not found in $PATH`)
	t.Setenv("FAKE_exec_EXIT", "255")
	_, err = r.Exec(t.Context(), b, p, nil, nil)
	var cerr *oci.CommandError
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, `exec failed: unable to start container process: exec: "nope": executable file not found in $PATH`, cerr.Message)

	_, err = r.Exec(t.Context(), b, &specs.Process{}, nil, nil)
	require.ErrorIs(t, err, oci.ErrInvalid)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = r.Exec(ctx, b, p, nil, nil)
	require.ErrorIs(t, err, context.Canceled)
}

// A process left behind by the exec'd command, holding its output open,
// does not make Exec hang or fail.
func TestExecLeavesProcess(t *testing.T) {
	r, _ := newFake(t, oci.WithWaitDelay(100*time.Millisecond))
	bg := filepath.Join(t.TempDir(), "bg.pid")
	t.Setenv("FAKE_BG_PID", bg)
	t.Cleanup(func() {
		if b, err := os.ReadFile(bg); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	var stdout bytes.Buffer
	code, err := r.Exec(t.Context(), &native.Bundle{ID: "c1"}, &specs.Process{Args: []string{"x"}}, &stdout, nil)
	require.NoError(t, err)
	assert.Zero(t, code)
}

func TestDeleteFake(t *testing.T) {
	r, calls := newFake(t)
	b := &native.Bundle{ID: "c1", Dir: t.TempDir()}
	require.NoError(t, r.Delete(t.Context(), b))
	assert.Contains(t, lastCall(t, calls), "delete --force c1")

	// delete fails, but state says the container is gone: success.
	t.Setenv("FAKE_delete_LOG", "something odd")
	t.Setenv("FAKE_delete_EXIT", "1")
	t.Setenv("FAKE_state_LOG", "container does not exist")
	t.Setenv("FAKE_state_EXIT", "1")
	require.NoError(t, r.Delete(t.Context(), b))
	assert.Contains(t, lastCall(t, calls), "state c1")

	// delete fails and the container is still there: its error.
	t.Setenv("FAKE_state_LOG", "")
	t.Setenv("FAKE_state_EXIT", "0")
	t.Setenv("FAKE_state_STDOUT", `{"ociVersion":"1.0.2","id":"c1","pid":42,"status":"running","bundle":"/b"}`)
	err := r.Delete(t.Context(), b)
	assert.EqualError(t, err, "fake-oci delete c1: exit status 1: something odd")

	st, err := r.State(t.Context(), "c1")
	require.NoError(t, err)
	assert.Equal(t, &specs.State{Version: "1.0.2", ID: "c1", Pid: 42, Status: specs.StateRunning, Bundle: "/b"}, st)
}

func TestNewRunnerInvalid(t *testing.T) {
	r, _ := newFake(t)
	for _, name := range []string{"", "native"} {
		_, err := oci.NewRunner(t.Context(), native.Config{}, name, r)
		require.ErrorIs(t, err, oci.ErrInvalid, "name %q", name)
	}
	_, err := oci.NewRunner(t.Context(), native.Config{}, "runc", nil)
	require.ErrorIs(t, err, oci.ErrInvalid)
}
