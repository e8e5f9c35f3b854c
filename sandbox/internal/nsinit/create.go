package nsinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// DefaultBinary is the executable re-executed for the child modes.
const DefaultBinary = "/proc/self/exe"

// CreateConfig describes the container init to create.
type CreateConfig struct {
	// Spec is the container's runtime spec. Root.Path must be an absolute,
	// already mounted root filesystem. Namespaces with a Path are joined,
	// those without are new; the mount namespace is always new.
	Spec *specs.Spec
	// StateDir is the container's state directory (absolute, existing);
	// Create makes the exec FIFO there and the init the exec-error file.
	StateDir string
	// Stdin, Stdout and Stderr are given to the container process; nil
	// means /dev/null. Their descriptors are switched to blocking mode
	// (os.File.Fd), which is what the container's programs expect.
	Stdin, Stdout, Stderr *os.File
	// Place is called with the child's host PID before it does anything
	// (to put it into its cgroup); nil skips it.
	Place func(pid int) error
	// Binary is the executable re-executed as the init; it must call Main.
	// Empty means DefaultBinary.
	Binary string
}

// Create forks the container init and waits until it has set up the
// container (namespaces, cgroup placement, mounts, pivot_root,
// credentials) and is blocked on the exec FIFO, waiting for Start. It
// returns the init's host PID.
//
// Create never waits for the child: the caller reaps it (the supervisor's
// wait4(-1) loop). When Create fails after forking, it has killed the
// child and still returns its PID (non-zero) so the caller knows what it
// reaps; pid is 0 when nothing was forked.
func Create(ctx context.Context, cfg CreateConfig) (pid int, err error) {
	if err := validateCreate(&cfg); err != nil {
		return 0, err
	}
	plan, err := planNamespaces(cfg.Spec.Linux)
	if err != nil {
		return 0, err
	}
	fifo := filepath.Join(cfg.StateDir, ExecFIFOName)
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		return 0, fmt.Errorf("create exec fifo: %w", &os.PathError{Op: "mkfifo", Path: fifo, Err: err})
	}
	defer func() {
		if err != nil {
			_ = os.Remove(fifo)
		}
	}()

	parent, child, err := newSyncPair()
	if err != nil {
		return 0, err
	}
	defer parent.Close()
	files, closeFiles, err := stdioFiles(cfg.Stdin, cfg.Stdout, cfg.Stderr)
	if err != nil {
		child.Close()
		return 0, err
	}
	nsfds, err := openJoins(plan.joins)
	if err != nil {
		child.Close()
		closeFiles()
		return 0, err
	}
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{ModeEnv + "=" + ModeInit},
		Files: append(files, child.Fd()),
		Sys:   &syscall.SysProcAttr{Setsid: true, Cloneflags: plan.clone},
	}
	bin := binaryOr(cfg.Binary)
	pid, err = forkJoined(plan.joins, nsfds, func() (int, error) {
		return syscall.ForkExec(bin, []string{"podkit-init"}, attr)
	})
	closeAll(nsfds)
	child.Close()
	closeFiles()
	if err != nil {
		return 0, fmt.Errorf("nsinit: fork container init %s: %w", bin, err)
	}
	defer func() {
		if err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}()

	if cfg.Place != nil {
		if err := cfg.Place(pid); err != nil {
			return pid, fmt.Errorf("nsinit: place container init %d: %w", pid, err)
		}
	}
	r, err := exchange(ctx, parent, initMessage{Spec: cfg.Spec, StateDir: cfg.StateDir})
	switch {
	case err != nil:
		return pid, fmt.Errorf("nsinit: container init %d: %w", pid, err)
	case r == nil:
		return pid, fmt.Errorf("nsinit: container init %d exited during setup: %w", pid, ErrNotRunning)
	case r.Error != "":
		return pid, fmt.Errorf("nsinit: container init %d: %w", pid, r.err())
	}
	return pid, nil
}

func validateCreate(cfg *CreateConfig) error {
	s := cfg.Spec
	switch {
	case s == nil:
		return fmt.Errorf("%w: no spec", ErrInvalidSpec)
	case s.Root == nil || !filepath.IsAbs(s.Root.Path):
		return fmt.Errorf("%w: root.path must be an absolute path", ErrInvalidSpec)
	case !filepath.IsAbs(cfg.StateDir):
		return fmt.Errorf("%w: state dir %q must be an absolute path", ErrInvalidSpec, cfg.StateDir)
	}
	if err := validateProcess(s.Process); err != nil {
		return err
	}
	if fi, err := os.Stat(s.Root.Path); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: root.path %s is not a directory", ErrInvalidSpec, s.Root.Path)
	}
	return nil
}

func validateProcess(p *specs.Process) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: no process", ErrInvalidSpec)
	case len(p.Args) == 0 || p.Args[0] == "":
		return fmt.Errorf("%w: process.args is empty", ErrInvalidSpec)
	case p.Terminal:
		return fmt.Errorf("%w: process.terminal: %w", ErrInvalidSpec, errors.ErrUnsupported)
	case p.Cwd != "" && !filepath.IsAbs(p.Cwd):
		return fmt.Errorf("%w: process.cwd %q must be absolute", ErrInvalidSpec, p.Cwd)
	}
	for _, r := range p.Rlimits {
		if _, ok := rlimitTypes[r.Type]; !ok {
			return fmt.Errorf("%w: unknown rlimit %q", ErrInvalidSpec, r.Type)
		}
	}
	if p.Capabilities != nil {
		for _, set := range [][]string{p.Capabilities.Bounding, p.Capabilities.Effective,
			p.Capabilities.Permitted, p.Capabilities.Inheritable, p.Capabilities.Ambient} {
			if _, err := capMask(set); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
			}
		}
	}
	return nil
}

func binaryOr(b string) string {
	if b == "" {
		return DefaultBinary
	}
	return b
}

// stdioFiles returns the fds for the child's 0, 1 and 2, opening /dev/null
// for the missing ones; closeFiles closes what it opened.
func stdioFiles(in, out, errf *os.File) (fds []uintptr, closeFiles func(), err error) {
	var null *os.File
	closeFiles = func() {
		if null != nil {
			null.Close()
		}
	}
	for _, f := range []*os.File{in, out, errf} {
		if f == nil {
			if null == nil {
				if null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
					return nil, nil, fmt.Errorf("open %s: %w", os.DevNull, err)
				}
			}
			f = null
		}
		fds = append(fds, f.Fd())
	}
	return fds, closeFiles, nil
}
