package nsinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// ModeEnv names the environment variable that turns a re-exec of the
// program into one of this package's child modes. The process's main (or
// TestMain) must call Main first thing when it is set to one of the modes.
const ModeEnv = "PODKIT_SANDBOX_MODE"

// Values of ModeEnv handled by Main.
const (
	// ModeInit is the container init created by Create.
	ModeInit = "init"
	// ModeExec is the helper Exec forks to run a command in a container.
	ModeExec = "exec"
	// ModePause is the Go pause process, used by StartPause where the
	// tiny static pause executable is not available (not linux/amd64) or
	// when PauseConfig.UseGo asks for it.
	ModePause = "pause"
)

// Names of the files Create and the init keep in a container's state dir.
const (
	// ExecFIFOName is the FIFO the created init waits on until Start.
	ExecFIFOName = "exec.fifo"
	// ExecErrorName receives the reason the entrypoint could not be
	// executed; it is empty when execve succeeded.
	ExecErrorName = "exec-error"
	// PauseName is the pause executable StartPause writes.
	PauseName = "pause"
)

// Exit codes of an init or exec helper that could not execute the process,
// as shells use them.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
)

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrInvalidSpec: the spec cannot be run (missing fields, bad values,
	// features this init does not implement).
	ErrInvalidSpec = errors.New("invalid container spec")
	// ErrSetup: the init (or exec helper) failed while setting up the
	// container; the message says which step.
	ErrSetup = errors.New("container setup failed")
	// ErrNotRunning: the init exited before it was ready, or is not
	// waiting to be started (never created, already started, or dead).
	ErrNotRunning = errors.New("container init is not running")
	// ErrExec: the process could not be executed (not found, not
	// executable); the error text is the one written to ExecErrorName.
	ErrExec = errors.New("cannot execute container process")
)

// init pins the main goroutine to the main thread in the child modes:
// capabilities, securebits and the namespaces joined by the exec helper
// are per thread, and the thread that calls execve is the one whose state
// the container process gets. Other processes importing this package are
// not affected.
func init() {
	switch os.Getenv(ModeEnv) {
	case ModeInit, ModeExec, ModePause:
		runtime.LockOSThread()
	}
}

// Main runs the child mode named by ModeEnv and never returns. It must be
// called from the main goroutine (main or TestMain), before anything else
// starts goroutines that could change process state. It exits with status
// 2 when ModeEnv names no mode of this package.
func Main() {
	runtime.LockOSThread()
	mode := os.Getenv(ModeEnv)
	switch mode {
	case ModeInit:
		initMain()
	case ModeExec:
		execMain()
	case ModePause:
		pauseMain()
	}
	fmt.Fprintf(os.Stderr, "nsinit: unknown %s %q\n", ModeEnv, mode)
	os.Exit(2)
}

// IsChildMode reports whether the current process was started as one of
// this package's children (so main must call Main).
func IsChildMode() bool {
	switch os.Getenv(ModeEnv) {
	case ModeInit, ModeExec, ModePause:
		return true
	}
	return false
}
