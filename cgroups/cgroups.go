package cgroups

import (
	"context"
	"errors"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

var (
	// ErrOutsideRoot reports a path that is not inside the manager's root:
	// the manager never touches cgroups it does not own.
	ErrOutsideRoot = errors.New("cgroup path outside the manager's root")
	// ErrInvalidPath reports a malformed cgroup path or name.
	ErrInvalidPath = errors.New("invalid cgroup path")
	// ErrNotFound reports a cgroup that does not exist.
	ErrNotFound = errors.New("cgroup not found")
	// ErrUnsupported reports a setting the host's cgroup version cannot
	// apply (for example unified keys on cgroup v1).
	ErrUnsupported = errors.New("not supported on this cgroup version")
)

// Manager creates and removes the cgroups of pods and containers.
type Manager interface {
	// EnsurePod creates or updates pod's cgroup in its QoS tier (updating
	// the tier as the kubelet does) and returns its path, the parent of the
	// pod's container cgroups.
	EnsurePod(ctx context.Context, pod *corev1.Pod) (parent string, err error)
	// EnsureContainer creates or updates the cgroup name under parent with
	// r (nil: just create) and returns its path.
	EnsureContainer(ctx context.Context, parent, name string, r *specs.LinuxResources) (path string, err error)
	// Stats reads the usage of the cgroup at path, its descendants
	// included.
	Stats(ctx context.Context, path string) (*Stats, error)
	// Remove kills every process left in path and its descendants, waits
	// for them to exit, then removes the directories. Removing a missing
	// cgroup is not an error.
	Remove(ctx context.Context, path string) error
}

// ProcessAdder is implemented by Managers that can move a process into a
// cgroup (every controller, for v1).
type ProcessAdder interface {
	AddProcess(ctx context.Context, path string, pid int) error
}

// OOMWatcher is implemented by Managers that report OOM kills. The channel
// gets an event each time the kernel's OOM killer acts in the cgroup, and
// is closed when ctx ends or the cgroup is removed.
type OOMWatcher interface {
	WatchOOM(ctx context.Context, path string) (<-chan OOMEvent, error)
}

// Stats is a cgroup's usage at one instant. Counters are cumulative.
type Stats struct {
	Time time.Time
	// CPUUsageNanos is the CPU time consumed by all tasks.
	CPUUsageNanos uint64
	// MemoryUsageBytes is the memory charged to the cgroup.
	MemoryUsageBytes uint64
	// MemoryWorkingSetBytes is usage minus inactive file pages, the value
	// the kubelet evicts on and reports as working set.
	MemoryWorkingSetBytes uint64
	// MemoryLimitBytes is the memory limit (the kernel's "unlimited" value
	// when none).
	MemoryLimitBytes uint64
	// OOMKills counts processes killed by the OOM killer.
	OOMKills uint64
	// PIDs is the number of tasks; PIDsLimit 0 means unlimited.
	PIDs      uint64
	PIDsLimit uint64
}

// OOMEvent says the OOM killer acted in a cgroup. The runtime turns it into
// a container termination with reason OOMKilled.
type OOMEvent struct {
	Path string
	Time time.Time
	// Kills is the cgroup's cumulative OOM kill count when the event was
	// read.
	Kills uint64
}
