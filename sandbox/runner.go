package sandbox

import (
	"context"
	"errors"
	"time"
)

// SandboxRunner is the CRI-shaped runtime contract the kubelet drives. It
// owns pod sandboxes (the namespaces a pod's containers share, wired to the
// network) and the containers started in them.
//
// IDs are chosen by the runner and unique on the node. Stop and Remove are
// idempotent: stopping a stopped sandbox or container, and removing one
// that does not exist, succeed. Errors wrap the sentinels below so callers
// use errors.Is.
type SandboxRunner interface {
	// RunPodSandbox creates and starts a sandbox: namespaces, network,
	// DNS files, and the pause process when the pod shares its PID
	// namespace. On error nothing of the sandbox is left behind.
	RunPodSandbox(ctx context.Context, cfg *SandboxConfig) (*Sandbox, error)
	// StopPodSandbox stops every container of the sandbox (killing them
	// without a grace period; the kubelet stops them gracefully first)
	// and tears the network down. The sandbox is NotReady afterwards.
	StopPodSandbox(ctx context.Context, id string) error
	// RemovePodSandbox stops the sandbox if needed and removes it and
	// all of its containers, leaving nothing on the host.
	RemovePodSandbox(ctx context.Context, id string) error
	// CreateContainer prepares a container in the sandbox: its process
	// exists, placed in its cgroup with its namespaces and root
	// filesystem, but the entrypoint has not been executed yet.
	CreateContainer(ctx context.Context, sandboxID string, cfg *ContainerConfig) (id string, err error)
	// StartContainer executes the entrypoint of a created container.
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends the stop signal, then SIGKILL when the
	// container is still running after grace, and returns once it has
	// exited.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// RemoveContainer removes a container, killing it if it still runs.
	RemoveContainer(ctx context.Context, id string) error
	// ContainerStatus reports a container's state.
	ContainerStatus(ctx context.Context, id string) (*ContainerStatus, error)
	// List reports every sandbox and container the runner knows.
	List(ctx context.Context) ([]*Sandbox, []*ContainerStatus, error)
}

// Execer is implemented by runners that run commands inside running
// containers (exec probes, lifecycle hooks). ExecSync runs cmd with the
// container's namespaces, root, user, capabilities and environment, waits
// at most timeout (0: no limit besides ctx), and returns its output and
// exit code. A command that cannot be started returns an error; one that
// runs and fails returns its non-zero exit code and a nil error.
type Execer interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*ExecResult, error)
}

// ExecResult is what ExecSync observed.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// EventSource is implemented by runners that push container state changes,
// so a kubelet's relist (PLEG) learns of exits without polling every
// container. The channel is closed when ctx ends.
type EventSource interface {
	Events(ctx context.Context) (<-chan ContainerEvent, error)
}

// ContainerEvent reports one container state change.
type ContainerEvent struct {
	ContainerID string
	SandboxID   string
	Type        ContainerEventType
	Time        time.Time
}

// ContainerEventType says what happened to a container.
type ContainerEventType string

// Container events.
const (
	ContainerCreated ContainerEventType = "Created"
	ContainerStarted ContainerEventType = "Started"
	ContainerStopped ContainerEventType = "Stopped"
	ContainerDeleted ContainerEventType = "Deleted"
)

// Sentinel errors.
var (
	// ErrNotFound: no sandbox or container with that ID.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a sandbox for the same pod and attempt, or a
	// container with the same name and attempt in the sandbox, exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalid: the configuration cannot be run (missing fields, bad
	// values).
	ErrInvalid = errors.New("invalid configuration")
	// ErrNotReady: the operation needs a ready sandbox, or a container in
	// another state (e.g. starting one that is not Created).
	ErrNotReady = errors.New("not ready")
	// ErrUnknownHandler: no runtime handler of that name.
	ErrUnknownHandler = errors.New("unknown runtime handler")
)
