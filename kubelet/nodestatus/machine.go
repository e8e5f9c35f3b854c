package nodestatus

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Machine is what the node status needs to know about the host: its
// resources, its identity, and the eviction signals that drive the
// pressure conditions. HostMachine reads the real host; tests use fakes.
type Machine interface {
	// Capacity returns the machine's resources: cpu (cores), memory
	// (bytes), ephemeral-storage (bytes of the filesystem holding the
	// node's state) and hugepages-<size> (bytes). The pod count is the
	// controller's (Config.MaxPods).
	Capacity(ctx context.Context) (corev1.ResourceList, error)
	// SystemInfo identifies the machine.
	SystemInfo(ctx context.Context) (SystemInfo, error)
	// Signals returns the eviction signals now.
	Signals(ctx context.Context) (Signals, error)
}

// SystemInfo is the machine's part of node.status.nodeInfo.
type SystemInfo struct {
	MachineID, SystemUUID, BootID string
	KernelVersion                 string
	// OSImage is /etc/os-release's PRETTY_NAME, e.g. "Debian GNU/Linux 12
	// (bookworm)".
	OSImage string
}

// Signals are the kubelet's eviction signals, in bytes, inodes and
// process IDs. A capacity of 0 means the signal is not observed.
type Signals struct {
	// MemoryAvailable is memory.available; MemoryCapacity its total.
	MemoryAvailable, MemoryCapacity int64
	// NodeFSAvailable is nodefs.available; NodeFSCapacity its total.
	NodeFSAvailable, NodeFSCapacity int64
	// NodeFSInodesFree is nodefs.inodesFree; NodeFSInodes its total.
	NodeFSInodesFree, NodeFSInodes int64
	// PIDsAvailable is pid.available; PIDsMax its total.
	PIDsAvailable, PIDsMax int64
}
