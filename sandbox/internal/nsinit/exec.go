package nsinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// DefaultWaitDelay is ExecConfig.WaitDelay's default.
const DefaultWaitDelay = time.Second

// ExecConfig describes a command to run in a running container.
type ExecConfig struct {
	// Pid is the host PID of the container's init (its entrypoint); the
	// command joins its mount, PID, network, IPC, UTS and cgroup
	// namespaces.
	Pid int
	// Process is what to run: args, env, cwd, user, capabilities,
	// no_new_privs, rlimits. A nil OOMScoreAdj copies the container's.
	Process *specs.Process
	// Place is called with the helper's host PID before it does anything
	// (to put it into the container's cgroup); nil skips it. See
	// CgroupPlacer.
	Place func(pid int) error
	// Stdin, Stdout, Stderr connect the command; nil means /dev/null.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Binary is the executable re-executed as the exec helper; it must
	// call Main. Empty means DefaultBinary.
	Binary string
	// WaitDelay bounds how long Exec waits for the command's output pipes
	// to close after it exited (a background child may hold them) and for
	// it to die once ctx is done. 0 means DefaultWaitDelay.
	WaitDelay time.Duration
}

// execNamespaces are joined by the helper itself, the mount namespace
// last; the PID namespace is entered by the forking thread.
var execNamespaces = []specs.LinuxNamespaceType{
	specs.CgroupNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.NetworkNamespace, specs.MountNamespace,
}

// nsFile maps spec namespace types to /proc/<pid>/ns names.
var nsFile = map[specs.LinuxNamespaceType]string{
	specs.PIDNamespace: "pid", specs.NetworkNamespace: "net", specs.MountNamespace: "mnt",
	specs.IPCNamespace: "ipc", specs.UTSNamespace: "uts", specs.CgroupNamespace: "cgroup",
}

// Exec runs cfg.Process inside the running container whose init is
// cfg.Pid, waits for it and returns its exit status (128+signal when
// killed by a signal). A command that ran and failed returns its code and
// a nil error; one that could not be executed returns ErrExec with
// ExitNotFound or ExitNotExecutable, one whose setup failed ErrSetup. When
// ctx ends the command is killed and ctx's error returned.
//
// Exec is meant for the runtime process (not the supervisor): it waits
// for its child itself. The helper is forked from a thread that entered
// the container's PID namespace and, still in the host's mount namespace,
// re-executes Binary; it then joins the other namespaces on its exec
// thread (unshare(CLONE_FS), setns of the mount namespace last), takes on
// the process's identity and execs the command.
func Exec(ctx context.Context, cfg ExecConfig) (exitCode int, err error) {
	if cfg.Pid <= 0 {
		return -1, fmt.Errorf("%w: exec: no container pid", ErrInvalidSpec)
	}
	if err := validateProcess(cfg.Process); err != nil {
		return -1, err
	}
	pidJoin := nsJoin{typ: specs.PIDNamespace, path: nsPath(cfg.Pid, specs.PIDNamespace), flag: unix.CLONE_NEWPID}
	pidfds, err := openJoins([]nsJoin{pidJoin})
	if err != nil {
		return -1, fmt.Errorf("nsinit: exec in %d: %w", cfg.Pid, err)
	}
	defer closeAll(pidfds)
	var nsFiles []*os.File
	defer func() {
		for _, f := range nsFiles {
			f.Close()
		}
	}()
	msg := execMessage{Process: cfg.Process, OOMScoreAdj: cfg.Process.OOMScoreAdj}
	for _, typ := range execNamespaces {
		f, err := os.Open(nsPath(cfg.Pid, typ))
		if err != nil {
			return -1, fmt.Errorf("nsinit: exec in %d: open %s namespace: %w", cfg.Pid, typ, err)
		}
		nsFiles = append(nsFiles, f)
		msg.Namespaces = append(msg.Namespaces, string(typ))
	}
	if msg.OOMScoreAdj == nil {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", cfg.Pid)); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				msg.OOMScoreAdj = &v
			}
		}
	}

	parent, child, err := newSyncPair()
	if err != nil {
		return -1, fmt.Errorf("nsinit: exec: %w", err)
	}
	defer parent.Close()
	cmd := exec.CommandContext(ctx, binaryOr(cfg.Binary))
	cmd.Args = []string{"podkit-exec"}
	cmd.Env = []string{ModeEnv + "=" + ModeExec}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.ExtraFiles = append([]*os.File{child}, nsFiles...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = cfg.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = DefaultWaitDelay
	}
	_, err = forkJoined([]nsJoin{pidJoin}, pidfds, func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	child.Close()
	if err != nil {
		return -1, fmt.Errorf("nsinit: exec in %d: start helper: %w", cfg.Pid, err)
	}
	if cfg.Place != nil {
		if err := cfg.Place(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return -1, fmt.Errorf("nsinit: exec in %d: place helper %d: %w", cfg.Pid, cmd.Process.Pid, err)
		}
	}
	r, xerr := exchange(ctx, parent, msg)
	if xerr != nil {
		_ = cmd.Process.Kill()
	}
	werr := cmd.Wait()
	code := exitStatus(cmd.ProcessState)
	switch {
	case ctx.Err() != nil:
		return code, fmt.Errorf("nsinit: exec in %d: %w", cfg.Pid, ctx.Err())
	case xerr != nil:
		return code, fmt.Errorf("nsinit: exec in %d: %w", cfg.Pid, xerr)
	case r != nil && r.Error != "":
		return code, fmt.Errorf("nsinit: exec in %d: %w", cfg.Pid, r.err())
	case werr != nil && cmd.ProcessState == nil:
		return -1, fmt.Errorf("nsinit: exec in %d: wait: %w", cfg.Pid, werr)
	case werr != nil && !errors.As(werr, new(*exec.ExitError)) && !errors.Is(werr, exec.ErrWaitDelay):
		return code, fmt.Errorf("nsinit: exec in %d: %w", cfg.Pid, werr)
	}
	return code, nil
}

func nsPath(pid int, typ specs.LinuxNamespaceType) string {
	return fmt.Sprintf("/proc/%d/ns/%s", pid, nsFile[typ])
}

// exitStatus is the shell-style status: the exit code, or 128+signal.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// CgroupPlacer returns a Place function that writes the PID into
// cgroup.procs of each of dirs (one per hierarchy on cgroup v1).
func CgroupPlacer(dirs ...string) func(pid int) error {
	return func(pid int) error {
		for _, d := range dirs {
			p := d + "/cgroup.procs"
			if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0); err != nil {
				return fmt.Errorf("add %d to %s: %w", pid, p, err)
			}
		}
		return nil
	}
}
