package sandbox

import (
	"net/netip"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/overlay"
)

// PodMeta names the pod a sandbox belongs to.
type PodMeta struct {
	Name, Namespace, UID string
	// Attempt counts the sandboxes created for the pod (0 first).
	Attempt uint32
}

// SandboxConfig describes a pod sandbox, the equivalent of CRI's
// PodSandboxConfig.
type SandboxConfig struct {
	Pod PodMeta
	// Hostname is the kernel hostname of the pod's UTS namespace (the
	// pod's name by default, see cni.KernelHostname). Ignored with
	// HostNetwork.
	Hostname string
	// LogDirectory is where the pod's container logs go, normally
	// /var/log/pods/<namespace>_<name>_<uid>. Container LogPaths are
	// relative to it.
	LogDirectory string
	// ResolvConf, Hosts and HostnameFile are the contents of the pod's
	// /etc/resolv.conf, /etc/hosts and /etc/hostname (see cni.ResolvConf,
	// cni.HostsFile, cni.HostnameFile). The runner writes them into the
	// sandbox and bind mounts them into every container; nil leaves the
	// image's file in place.
	ResolvConf, Hosts, HostnameFile []byte
	// CgroupParent is the pod's cgroup (cgroups.Manager.EnsurePod);
	// containers get cgroups under it. Empty: no cgroups.
	CgroupParent string
	// HostNetwork, HostPID and HostIPC share the node's namespaces
	// instead of creating the pod's own.
	HostNetwork, HostPID, HostIPC bool
	// SharePID is the pod's shareProcessNamespace: its containers share
	// one PID namespace whose PID 1 is the pause process.
	SharePID bool
	// Sysctls are namespaced sysctls set in the sandbox (net.*, kernel.shm*,
	// kernel.msg*, kernel.sem, fs.mqueue.*).
	Sysctls map[string]string
	// RuntimeHandler selects the runtime (the pod's RuntimeClass
	// handler); empty is the default.
	RuntimeHandler string
	Labels         map[string]string
	Annotations    map[string]string
}

// SandboxState is a sandbox's state.
type SandboxState string

// Sandbox states, as in CRI.
const (
	SandboxReady    SandboxState = "SANDBOX_READY"
	SandboxNotReady SandboxState = "SANDBOX_NOTREADY"
)

// Sandbox is a sandbox as the runner reports it.
type Sandbox struct {
	ID        string
	Pod       PodMeta
	State     SandboxState
	CreatedAt time.Time
	// IPs are the pod's addresses from the Networker (none with
	// HostNetwork).
	IPs []netip.Addr
	// NetNS is the path of the pinned network namespace ("" with
	// HostNetwork).
	NetNS string
	// PausePID is the pause process's PID in the node's PID namespace,
	// 0 when the sandbox has none.
	PausePID       int
	RuntimeHandler string
	Labels         map[string]string
	Annotations    map[string]string
}

// ImageConfig is the part of an image's configuration that shapes a
// container's process (v1.Config of go-containerregistry, trimmed).
type ImageConfig struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	// User is the image's user: "uid", "uid:gid", "name" or "name:group",
	// resolved against the rootfs's /etc/passwd and /etc/group.
	User string
	// StopSignal is the signal StopContainer sends first ("SIGTERM" when
	// empty), by name ("SIGQUIT") or number ("3").
	StopSignal string
}

// Propagation is a volume mount's propagation mode, as in Kubernetes.
type Propagation string

// Mount propagation modes.
const (
	PropagationPrivate         Propagation = "None"
	PropagationHostToContainer Propagation = "HostToContainer"
	PropagationBidirectional   Propagation = "Bidirectional"
)

// Mount is a host path bind mounted into a container.
type Mount struct {
	ContainerPath string
	HostPath      string
	ReadOnly      bool
	Propagation   Propagation
}

// ContainerConfig describes a container, the equivalent of CRI's
// ContainerConfig once the kubelet has resolved the pod spec.
type ContainerConfig struct {
	Name string
	// Attempt counts the container's restarts (the restartCount).
	Attempt uint32
	// Image names the image (reported back in status) and ImageID its
	// config digest.
	Image, ImageID string
	// ImageConfig is the image's runtime configuration.
	ImageConfig ImageConfig
	// Rootfs are the mounts of the container's root filesystem, from the
	// Snapshotter (Prepare of an active snapshot). The caller owns the
	// snapshot and removes it after RemoveContainer.
	Rootfs []overlay.Mount
	// Command and Args are the pod spec's; they are merged with the
	// image's Entrypoint and Cmd as Kubernetes does.
	Command, Args []string
	// Env are "NAME=value" pairs, resolved by the kubelet; they override
	// the image's Env of the same name.
	Env []string
	// WorkingDir overrides the image's.
	WorkingDir string
	Mounts     []Mount
	// Resources are the container's cgroup settings.
	Resources *specs.LinuxResources
	// Security is the container's resolved security context.
	Security SecurityConfig
	// LogPath is the CRI log file, relative to the sandbox's
	// LogDirectory (normally "<name>/<attempt>.log"). Empty: output is
	// discarded.
	LogPath     string
	Labels      map[string]string
	Annotations map[string]string
}

// SecurityConfig is a container's resolved security context.
type SecurityConfig struct {
	// RunAsUser and RunAsGroup override the image's user.
	RunAsUser, RunAsGroup *int64
	// SupplementalGroups are added to the process's groups.
	SupplementalGroups []int64
	// Privileged gives every capability, all devices and no masked or
	// read-only paths.
	Privileged bool
	// CapAdd and CapDrop change containerd's default capability set;
	// names with or without the CAP_ prefix, "ALL" for all.
	CapAdd, CapDrop []string
	// NoNewPrivs sets no_new_privs (allowPrivilegeEscalation: false).
	NoNewPrivs bool
	// ReadOnlyRootfs mounts the root filesystem read-only.
	ReadOnlyRootfs bool
	// UnmaskedProc (procMount: Unmasked) leaves /proc unmasked.
	UnmaskedProc bool
}

// ContainerState is a container's state, as in CRI.
type ContainerState string

// Container states.
const (
	ContainerStateCreated ContainerState = "CONTAINER_CREATED"
	ContainerStateRunning ContainerState = "CONTAINER_RUNNING"
	ContainerStateExited  ContainerState = "CONTAINER_EXITED"
	ContainerStateUnknown ContainerState = "CONTAINER_UNKNOWN"
)

// Reasons for exited containers, as the kubelet reports them.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
	// ReasonStartError: the entrypoint could not be executed (exit code
	// 128, as containerd reports it).
	ReasonStartError = "StartError"
)

// ContainerStatus is a container as the runner reports it.
type ContainerStatus struct {
	ID        string
	SandboxID string
	Name      string
	Attempt   uint32
	State     ContainerState
	// CreatedAt, StartedAt and FinishedAt are zero until they happen.
	CreatedAt, StartedAt, FinishedAt time.Time
	// ExitCode is the process's exit status, 128+signal when a signal
	// killed it.
	ExitCode int32
	// Reason is Completed, Error or OOMKilled once exited.
	Reason  string
	Message string
	// PID is the container's init in the node's PID namespace while it
	// runs.
	PID            int
	Image, ImageID string
	// LogPath is the absolute path of the CRI log file ("" without one).
	LogPath     string
	Labels      map[string]string
	Annotations map[string]string
}
