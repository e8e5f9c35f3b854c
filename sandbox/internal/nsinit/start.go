package nsinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Start releases a created init: it executes the container's process.
// Start returns once the init has called execve successfully (nil) or has
// given up: ErrExec with the reason written to ExecErrorName (the init
// then exits with ExitNotFound or ExitNotExecutable), ErrNotRunning when
// the init is not waiting (never created, already started, or dead).
//
// The init holds the exec FIFO open read-write and close-on-exec, blocked
// reading it. Start opens it write-only and non-blocking, which fails with
// ENXIO when no init holds it, writes the go byte, and waits on a
// read-only descriptor for the hang-up that the FIFO reports when its last
// writer, the init's descriptor, goes away at execve or exit. No polling,
// and no PID is needed.
func Start(ctx context.Context, stateDir string) error {
	fifo := filepath.Join(stateDir, ExecFIFOName)
	w, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENOENT):
		return fmt.Errorf("nsinit: start %s: %w", stateDir, ErrNotRunning)
	case err != nil:
		return fmt.Errorf("nsinit: start: %w", &os.PathError{Op: "open", Path: fifo, Err: err})
	}
	// Opened while a writer (ours) exists, so the read end reports POLLHUP
	// as soon as the writers are gone.
	r, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(w)
		return fmt.Errorf("nsinit: start: %w", &os.PathError{Op: "open", Path: fifo, Err: err})
	}
	defer unix.Close(r)
	_, err = unix.Write(w, []byte{0})
	unix.Close(w)
	if err != nil {
		return fmt.Errorf("nsinit: start: write %s: %w", fifo, err)
	}
	// The init owns the process now; the FIFO has done its job.
	_ = os.Remove(fifo)
	if err := waitHangup(ctx, r); err != nil {
		return fmt.Errorf("nsinit: start %s: %w", stateDir, err)
	}
	return ExecError(stateDir)
}

// waitHangup blocks until fd reports POLLHUP or ctx ends. POLLIN is not
// requested: the go byte may still sit in the FIFO for the init to read.
func waitHangup(ctx context.Context, fd int) error {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(efd)
	stop := context.AfterFunc(ctx, func() {
		_, _ = unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	})
	defer stop()
	fds := []unix.PollFd{{Fd: int32(fd)}, {Fd: int32(efd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("poll exec fifo: %w", err)
		case fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0:
			return nil
		case fds[1].Revents != 0:
			return ctx.Err()
		}
	}
}

// ExecError returns the exec failure the init of stateDir recorded,
// wrapped in ErrExec, or nil when there is none.
func ExecError(stateDir string) error {
	b, err := os.ReadFile(filepath.Join(stateDir, ExecErrorName))
	if err != nil || len(b) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrExec, strings.TrimSpace(string(b)))
}
