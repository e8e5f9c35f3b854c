package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/internal/procstat"
	"github.com/podkit/podkit/sandbox/native"
)

// maxStderr caps the stderr kept of a command for its error.
const maxStderr = 64 << 10

// globalArgs are the arguments before the subcommand: the state root, the
// JSON log, the cgroup driver and the user's extra arguments.
func (r *Runtime) globalArgs(logFile string) []string {
	args := []string{"--root", r.root, "--log", logFile, "--log-format", "json"}
	if r.flavor == FlavorCrun {
		args = append(args, "--cgroup-manager=cgroupfs")
	}
	return append(args, r.extra...)
}

// CreateCommand is `create --bundle --pid-file` of bundle b, logging to
// <bundle>/<name>-create.log. The supervisor runs it with the container's
// log pipes as stdout and stderr; the runtime passes them on to the
// container process, which waits for Start.
func (r *Runtime) CreateCommand(b *native.Bundle) []string {
	argv := append([]string{r.binary}, r.globalArgs(r.createLog(b))...)
	return append(argv, "create", "--bundle", b.Dir, "--pid-file", b.PidFile, b.ID)
}

// Start releases the created container into its entrypoint.
func (r *Runtime) Start(ctx context.Context, b *native.Bundle) error {
	_, err := r.run(ctx, "start", b.ID, "start", b.ID)
	return err
}

// Delete removes the runtime's state of the container (and the cgroup it
// made), killing what is left of it. An unknown container is no error.
func (r *Runtime) Delete(ctx context.Context, b *native.Bundle) error {
	_, err := r.run(ctx, "delete", b.ID, "delete", "--force", b.ID)
	if err == nil {
		return nil
	}
	if _, serr := r.State(ctx, b.ID); errors.Is(serr, ErrNotExist) {
		return nil
	}
	return err
}

// State is the runtime's `state` of a container; ErrNotExist when it
// knows no such container.
func (r *Runtime) State(ctx context.Context, id string) (*specs.State, error) {
	out, err := r.run(ctx, "state", id, "state", id)
	if err != nil {
		return nil, err
	}
	var st specs.State
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("%s state %s: %w", r.name, id, err)
	}
	return &st, nil
}

// run runs one subcommand to completion with a private JSON log and
// returns its stdout.
func (r *Runtime) run(ctx context.Context, op, id string, args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp(r.tmp, "podkit-"+r.name+"-"+op+"-")
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", r.name, op, id, err)
	}
	defer os.RemoveAll(dir)
	logFile := filepath.Join(dir, "log.json")
	argv := append(r.globalArgs(logFile), args...)
	var stdout bytes.Buffer
	stderr := &tail{max: maxStderr}
	cmd := exec.CommandContext(ctx, r.binary, argv...)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	r.log.Debug("oci command", "runtime", r.name, "args", argv)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		cerr := r.newCommandError(op, id, err, logFile, stderr.Bytes())
		r.log.Debug("oci command failed", "runtime", r.name, "op", op, "id", id, "err", cerr)
		return nil, cerr
	}
	return stdout.Bytes(), nil
}

// Exec runs p in the running container without --detach, its stdout and
// stderr copied to the given writers, and returns its exit status. An
// error means the runtime failed (it logged an error, or died); a command
// that runs and fails is an exit code. When ctx ends, the command is
// SIGKILLed and Exec returns ctx's error.
func (r *Runtime) Exec(ctx context.Context, b *native.Bundle, p *specs.Process, stdout, stderr io.Writer) (int, error) {
	if p == nil || len(p.Args) == 0 {
		return 0, fmt.Errorf("%s exec %s: no command: %w", r.name, b.ID, ErrInvalid)
	}
	dir, err := os.MkdirTemp(r.tmp, "podkit-"+r.name+"-exec-")
	if err != nil {
		return 0, fmt.Errorf("%s exec %s: %w", r.name, b.ID, err)
	}
	defer os.RemoveAll(dir)
	data, err := json.Marshal(p)
	if err != nil {
		return 0, fmt.Errorf("%s exec %s: %w", r.name, b.ID, err)
	}
	// The process may carry secrets in its environment: 0600, in a 0700 dir.
	procFile := filepath.Join(dir, "process.json")
	if err := os.WriteFile(procFile, data, 0o600); err != nil {
		return 0, fmt.Errorf("%s exec %s: %w", r.name, b.ID, err)
	}
	logFile, pidFile := filepath.Join(dir, "log.json"), filepath.Join(dir, "pid")
	argv := append(r.globalArgs(logFile), "exec", "--process", procFile, "--pid-file", pidFile, b.ID)
	if stdout == nil {
		stdout = io.Discard
	}
	// The runtime's own failures go to its stderr too; keep a copy.
	errTail := &tail{max: maxStderr}
	if stderr == nil {
		stderr = io.Discard
	}
	cmd := exec.CommandContext(ctx, r.binary, argv...)
	cmd.Stdout, cmd.Stderr = stdout, io.MultiWriter(stderr, errTail)
	cmd.Cancel = func() error { return r.cancelExec(cmd.Process, pidFile) }
	// Bounds the wait for the runtime after Cancel, and for the output
	// pipes after the runtime exited (a background child may hold them).
	cmd.WaitDelay = r.delay
	r.log.Debug("oci command", "runtime", r.name, "args", argv)
	err = cmd.Run()
	if ctx.Err() != nil {
		return 0, fmt.Errorf("%s exec %s %q: %w", r.name, b.ID, p.Args, ctx.Err())
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited 0, but a process it left in the container holds its
		// output open; what that one writes later is not ours to wait for.
	default: // not started, killed by a signal, or its output pipes stuck
		return 0, r.newCommandError("exec", b.ID, err, logFile, errTail.Bytes())
	}
	if logged := logErrors(logFile); len(logged) > 0 {
		if err == nil {
			err = errors.New("exit status 0")
		}
		return 0, r.newCommandError("exec", b.ID, err, logFile, nil)
	}
	return cmd.ProcessState.ExitCode(), nil
}

// cancelExec kills the exec'd process, which the runtime (a child
// subreaper while it waits) parents; the runtime then exits with its
// status. Before the process exists the runtime itself is killed.
func (r *Runtime) cancelExec(rt *os.Process, pidFile string) error {
	if pid := readPid(pidFile); pid > 0 {
		// While its parent has not reaped it, pid names this process.
		if st, err := procstat.ReadStat(pid); err == nil && st.PPID == rt.Pid && syscall.Kill(pid, syscall.SIGKILL) == nil {
			return nil
		}
	}
	return rt.Kill()
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) Bytes() []byte { return t.buf }
