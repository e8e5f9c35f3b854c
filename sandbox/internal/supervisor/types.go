package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Mode is the value of the PODKIT_SANDBOX_MODE environment variable that
// makes a re-exec of the binary run Main.
const Mode = "supervisor"

// Environment of the re-exec'd supervisor, set by Connect.
const (
	envMode    = "PODKIT_SANDBOX_MODE"
	envRoot    = "PODKIT_SUPERVISOR_ROOT"
	envIdle    = "PODKIT_SUPERVISOR_IDLE_EXIT"
	envReadyFD = "PODKIT_SUPERVISOR_READY_FD"
	envCgroup  = "PODKIT_SUPERVISOR_CGROUP_PROCS" // JSON array of cgroup.procs files
)

// supervisorEnv are the variables of the re-exec, removed from the
// supervisor's environment so that its children do not inherit them.
var supervisorEnv = []string{envMode, envRoot, envIdle, envReadyFD, envCgroup}

// Files in the runtime root.
const (
	sockName  = "supervisor.sock"
	pidName   = "supervisor.pid"
	lockName  = "supervisor.lock"
	logName   = "supervisor.log"
	tasksDir  = "tasks"
	taskFile  = "task.json"
	exitFile  = "exit.json"
	procTitle = "podkit-supervisor"
)

// DefaultIdleExit is how long a supervisor without running tasks and
// without clients waits before it exits.
const DefaultIdleExit = 30 * time.Second

// Kind says how a task's process is made.
type Kind string

// Task kinds.
const (
	// KindNative: the supervisor calls its NativeLauncher (podkit's own
	// container init) with the task's NativeSpec.
	KindNative Kind = "native"
	// KindExec: the supervisor runs a command (e.g. `runc create`) that
	// leaves the task's process behind and names it in a pid file.
	KindExec Kind = "exec"
)

// TaskSpec describes a task for CreateTask.
type TaskSpec struct {
	// ID names the task; unique per supervisor, a valid file name.
	ID   string
	Kind Kind
	// LogPath is the CRI log file the task's stdout and stderr go to; ""
	// discards them.
	LogPath string
	// MemoryCgroupDir is the task's memory cgroup directory (v1 memory
	// controller or v2 unified), whose oom_kill counter tells OOMKilled;
	// "" never reports OOMKilled.
	MemoryCgroupDir string
	Native          *NativeSpec `json:",omitempty"`
	Exec            *ExecSpec   `json:",omitempty"`
	Labels          map[string]string
}

// NativeSpec is what a KindNative task's launcher gets.
type NativeSpec struct {
	// SpecPath is the OCI runtime spec (config.json).
	SpecPath string
	// StateDir is the container's state directory.
	StateDir string
	// CgroupProcs are the cgroup.procs files the process's pid is written
	// to before it runs.
	CgroupProcs []string
	// InitBinary is the executable the launcher re-executes as the
	// container init ("" : the supervisor's own binary).
	InitBinary string `json:",omitempty"`
}

// ExecSpec is the command of a KindExec task: it runs with the task's log
// pipes as stdout and stderr (so what it prints, also when it fails, is in
// the log), must exit 0, and leaves the task's process (reparented to the
// supervisor, a child subreaper) whose pid it wrote to PidFile. When it
// fails, CreateTask's error ends with the tail of its stderr. It runs in
// its own process group, which is killed when CreateTask's context ends
// before the command does.
type ExecSpec struct {
	// Argv is the command; Argv[0] is looked up in PATH when it has no
	// slash.
	Argv []string
	// Env is the command's environment; nil inherits the supervisor's.
	Env []string
	// Dir is the working directory; "" is the supervisor's ("/").
	Dir string
	// PidFile is where the command writes the task's pid.
	PidFile string
}

// TaskState is a task as the supervisor reports it.
type TaskState struct {
	ID        string
	Pid       int
	CreatedAt time.Time
	Exited    bool
	// ExitCode is the exit status, or 128+signal when a signal killed the
	// process; 255 when it could not be learned (see Message).
	ExitCode int32
	// Signal is the signal that killed the process, 0 otherwise.
	Signal     int
	FinishedAt time.Time
	// OOMKilled: the memory cgroup's oom_kill counter grew during the
	// task's life.
	OOMKilled bool
	// Orphaned: the task was created by an earlier supervisor process
	// that died; this one can see whether it runs but not learn its exit
	// code, and no longer has its output pipes.
	Orphaned bool
	// Message explains an exit the supervisor could not observe.
	Message string
	Labels  map[string]string
}

// NativeLauncher starts a KindNative task's process: a child of the
// calling process with stdout and stderr as its fds 1 and 2, calling place
// with its pid before the process runs anything of the container (to put
// it in its cgroups). It must not wait for the process: the supervisor's
// reaper does. On error it must leave no process behind. The lead's
// dispatcher passes an adapter around nsinit.Create.
type NativeLauncher func(ctx context.Context, spec NativeSpec, stdout, stderr *os.File, place func(pid int) error) (pid int, err error)

// Sentinel errors; errors returned by the Client wrap them (also across
// the socket).
var (
	// ErrNotFound: no task with that ID.
	ErrNotFound = errors.New("task not found")
	// ErrAlreadyExists: a task with that ID exists.
	ErrAlreadyExists = errors.New("task already exists")
	// ErrInvalid: the TaskSpec cannot be run.
	ErrInvalid = errors.New("invalid task spec")
	// ErrRunning: the operation needs an exited task.
	ErrRunning = errors.New("task is running")
	// ErrExited: the task has exited (e.g. signalling it).
	ErrExited = errors.New("task has exited")
	// ErrClosed: the client was closed, or its connection to the
	// supervisor was lost during the call (the next call reconnects).
	ErrClosed = errors.New("supervisor connection closed")
	// ErrProtocol: the supervisor speaks another protocol version (the
	// binary was upgraded while it ran) or sent garbage.
	ErrProtocol = errors.New("supervisor protocol error")
)

// validate checks a spec before anything is created.
func (s *TaskSpec) validate() error {
	if err := validID(s.ID); err != nil {
		return err
	}
	switch s.Kind {
	case KindNative:
		if s.Native == nil || s.Native.SpecPath == "" {
			return fmt.Errorf("task %q: kind native needs Native.SpecPath: %w", s.ID, ErrInvalid)
		}
	case KindExec:
		if s.Exec == nil || len(s.Exec.Argv) == 0 || s.Exec.PidFile == "" {
			return fmt.Errorf("task %q: kind exec needs Exec.Argv and Exec.PidFile: %w", s.ID, ErrInvalid)
		}
	default:
		return fmt.Errorf("task %q: unknown kind %q: %w", s.ID, s.Kind, ErrInvalid)
	}
	if s.LogPath != "" && !filepath.IsAbs(s.LogPath) {
		return fmt.Errorf("task %q: log path %q is not absolute: %w", s.ID, s.LogPath, ErrInvalid)
	}
	return nil
}

// validID accepts IDs usable as a directory name.
func validID(id string) error {
	if id == "" || id == "." || id == ".." || len(id) > 200 || filepath.Base(id) != id {
		return fmt.Errorf("task id %q is not a valid file name: %w", id, ErrInvalid)
	}
	for _, r := range id {
		if r == 0 || r == '/' {
			return fmt.Errorf("task id %q is not a valid file name: %w", id, ErrInvalid)
		}
	}
	return nil
}
