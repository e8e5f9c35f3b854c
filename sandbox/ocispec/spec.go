package ocispec

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox"
)

// Annotation keys containerd's CRI plugin sets on every container, read
// by node tools (cAdvisor, log collectors) to map containers to pods.
const (
	AnnotationContainerType    = "io.kubernetes.cri.container-type"
	AnnotationSandboxID        = "io.kubernetes.cri.sandbox-id"
	AnnotationContainerName    = "io.kubernetes.cri.container-name"
	AnnotationSandboxName      = "io.kubernetes.cri.sandbox-name"
	AnnotationSandboxNamespace = "io.kubernetes.cri.sandbox-namespace"
	AnnotationSandboxUID       = "io.kubernetes.cri.sandbox-uid"
	AnnotationImageName        = "io.kubernetes.cri.image-name"

	// ContainerTypeContainer is AnnotationContainerType's value for an
	// application container.
	ContainerTypeContainer = "container"
)

// SpecVersion is the ociVersion of generated specs. They use nothing
// newer than runtime-spec 1.0, and claiming a newer version only makes
// older runtimes refuse them (crun before 1.9 rejects anything above
// 1.1, e.g. Debian 12's crun 1.8.1).
const SpecVersion = "1.0.2"

// Input is what Generate needs: the container's configuration and the
// facts about its sandbox that the runtime decided.
type Input struct {
	// SandboxID and ContainerID name the sandbox and the container (for
	// annotations and error messages).
	SandboxID, ContainerID string
	// Sandbox and Container are the configurations (both required).
	Sandbox   *sandbox.SandboxConfig
	Container *sandbox.ContainerConfig
	// RootfsPath is the container's root filesystem, mounted on the host
	// (spec.root.path; absolute). User and group names are resolved from
	// its etc/passwd and etc/group.
	RootfsPath string

	// NetNS, IPCNS, UTSNS and PIDNS are namespace paths the container
	// joins (e.g. the sandbox's pinned ones, or /proc/<pause>/ns/pid when
	// the pod shares its PID namespace); "" creates a new namespace. The
	// mount namespace is always new.
	NetNS, IPCNS, UTSNS, PIDNS string
	// HostNetwork, HostIPC, HostUTS and HostPID leave the namespace out of
	// the spec, so the container shares the node's. Kubernetes pods with
	// hostNetwork share the node's UTS namespace too: set HostUTS with
	// HostNetwork unless the sandbox pinned a UTS namespace of its own.
	HostNetwork, HostIPC, HostUTS, HostPID bool
	// CgroupNS gives unprivileged containers a new cgroup namespace;
	// containerd does that on cgroup v2 hosts (cgroups.Mode() unified)
	// and not on v1 or hybrid ones.
	CgroupNS bool

	// ResolvConfPath, HostsPath, HostnamePath and ShmPath are host files
	// (a directory for ShmPath) bind mounted at /etc/resolv.conf,
	// /etc/hosts, /etc/hostname and /dev/shm; "" skips the mount (and
	// for ShmPath gives the container a private 64 MiB tmpfs). The etc
	// files are read-only when the root filesystem is. A volume at the
	// same path wins. With hostIPC, pass the node's /dev/shm as ShmPath.
	ResolvConfPath, HostsPath, HostnamePath, ShmPath string

	// CgroupsPath is the container's cgroup (linux.cgroupsPath), an
	// absolute cgroupfs-style path such as
	// /kubepods/burstable/pod<uid>/<id>; "" leaves it to the runtime.
	CgroupsPath string

	// Hostname is the container's host name: set in the kernel when the
	// container gets a new UTS namespace, and HOSTNAME in its
	// environment. "" means Sandbox.Hostname, or the node's host name
	// when the container shares the node's network or UTS namespace.
	Hostname string

	// AllCapabilities is what a capability list of "ALL" and a
	// privileged container get; nil means CurrentCapabilities(), read
	// only when needed. The runtime that starts the container must hold
	// all of them.
	AllCapabilities []string

	// LookupMount finds the mount holding a host path, to check volume
	// propagation; nil means LookupMount (the real mount table).
	LookupMount func(path string) (*mountinfo.Info, error)
}

// Generate builds the OCI runtime spec of a container (see the package
// doc for every choice it makes). Configuration errors wrap
// sandbox.ErrInvalid and name the offending field.
func Generate(in Input) (*specs.Spec, error) {
	if err := validate(&in); err != nil {
		return nil, err
	}
	c, sec := in.Container, in.Container.Security
	args, err := Command(c)
	if err != nil {
		return nil, err
	}
	cwd, err := workingDir(c)
	if err != nil {
		return nil, err
	}
	user, err := ResolveUser(in.RootfsPath, c.ImageConfig.User, sec)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	all := in.AllCapabilities
	if all == nil && needsAll(sec) {
		if all, err = CurrentCapabilities(); err != nil {
			return nil, err
		}
	}
	caps, err := Capabilities(sec, all)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	hostname, err := containerHostname(&in)
	if err != nil {
		return nil, err
	}
	mounts, rootProp, err := buildMounts(&in, sec.Privileged)
	if err != nil {
		return nil, err
	}
	resources, err := buildResources(c.Resources, sec.Privileged)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}

	s := &specs.Spec{
		Version: SpecVersion,
		Process: &specs.Process{
			User: user,
			Args: args,
			Env:  Env(c.ImageConfig.Env, c.Env, hostname),
			Cwd:  cwd,
			Capabilities: &specs.LinuxCapabilities{
				Bounding:  caps,
				Effective: caps,
				Permitted: caps,
			},
			NoNewPrivileges: sec.NoNewPrivs,
		},
		Root:        &specs.Root{Path: in.RootfsPath, Readonly: sec.ReadOnlyRootfs},
		Mounts:      mounts,
		Annotations: annotations(&in),
		Linux: &specs.Linux{
			Resources:         resources,
			CgroupsPath:       in.CgroupsPath,
			Namespaces:        namespaces(&in),
			RootfsPropagation: rootProp,
		},
	}
	if newUTS(&in) {
		s.Hostname = hostname
	}
	if !sec.Privileged && !sec.UnmaskedProc {
		s.Linux.MaskedPaths = DefaultMaskedPaths()
		s.Linux.ReadonlyPaths = DefaultReadonlyPaths()
	}
	return s, nil
}

// DefaultMaskedPaths returns the paths hidden from unprivileged
// containers (Kubernetes' and containerd's defaults).
func DefaultMaskedPaths() []string {
	return []string{
		"/proc/acpi",
		"/proc/asound",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/proc/sched_debug",
		"/sys/firmware",
		"/sys/devices/virtual/powercap",
		"/proc/scsi",
	}
}

// DefaultReadonlyPaths returns the paths unprivileged containers see
// read-only (Kubernetes' and containerd's defaults).
func DefaultReadonlyPaths() []string {
	return []string{
		"/proc/bus",
		"/proc/fs",
		"/proc/irq",
		"/proc/sys",
		"/proc/sysrq-trigger",
	}
}

// validate checks the parts of in that Generate's helpers do not.
func validate(in *Input) error {
	if in.Container == nil {
		return fmt.Errorf("container %s: no Container configuration: %w", in.ContainerID, sandbox.ErrInvalid)
	}
	if in.Sandbox == nil {
		return fmt.Errorf("container %s: no Sandbox configuration: %w", in.ContainerID, sandbox.ErrInvalid)
	}
	if in.Container.Name == "" {
		return fmt.Errorf("container %s: Container.Name is empty: %w", in.ContainerID, sandbox.ErrInvalid)
	}
	name := in.Container.Name
	if in.RootfsPath == "" || !filepath.IsAbs(in.RootfsPath) {
		return fmt.Errorf("container %q: RootfsPath %q is not an absolute path: %w", name, in.RootfsPath, sandbox.ErrInvalid)
	}
	if in.CgroupsPath != "" && !filepath.IsAbs(in.CgroupsPath) {
		return fmt.Errorf("container %q: CgroupsPath %q is not absolute: %w", name, in.CgroupsPath, sandbox.ErrInvalid)
	}
	for _, ns := range []struct {
		field, path string
		host        bool
	}{
		{"NetNS", in.NetNS, in.HostNetwork},
		{"IPCNS", in.IPCNS, in.HostIPC},
		{"UTSNS", in.UTSNS, in.HostUTS},
		{"PIDNS", in.PIDNS, in.HostPID},
	} {
		if ns.path == "" {
			continue
		}
		if ns.host {
			return fmt.Errorf("container %q: %s %q given for a namespace shared with the host: %w", name, ns.field, ns.path, sandbox.ErrInvalid)
		}
		if !filepath.IsAbs(ns.path) {
			return fmt.Errorf("container %q: %s %q is not absolute: %w", name, ns.field, ns.path, sandbox.ErrInvalid)
		}
	}
	return nil
}

// newUTS reports whether the container gets a UTS namespace of its own.
func newUTS(in *Input) bool { return !in.HostUTS && in.UTSNS == "" }

// containerHostname picks the container's host name (see Input.Hostname).
func containerHostname(in *Input) (string, error) {
	if in.Hostname != "" {
		return in.Hostname, nil
	}
	if !in.HostNetwork && !in.HostUTS && in.Sandbox.Hostname != "" {
		return in.Sandbox.Hostname, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("container %q: node host name: %w", in.Container.Name, err)
	}
	return h, nil
}

// namespaces lists the container's namespaces in containerd's order.
func namespaces(in *Input) []specs.LinuxNamespace {
	var ns []specs.LinuxNamespace
	add := func(t specs.LinuxNamespaceType, path string, host bool) {
		if !host {
			ns = append(ns, specs.LinuxNamespace{Type: t, Path: path})
		}
	}
	add(specs.PIDNamespace, in.PIDNS, in.HostPID)
	add(specs.IPCNamespace, in.IPCNS, in.HostIPC)
	add(specs.UTSNamespace, in.UTSNS, in.HostUTS)
	add(specs.MountNamespace, "", false)
	add(specs.NetworkNamespace, in.NetNS, in.HostNetwork)
	add(specs.CgroupNamespace, "", !in.CgroupNS || in.Container.Security.Privileged)
	return ns
}

// annotations returns the container's annotations plus containerd's CRI
// ones, which win over the container's.
func annotations(in *Input) map[string]string {
	a := maps.Clone(in.Container.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	pod := in.Sandbox.Pod
	maps.Copy(a, map[string]string{
		AnnotationContainerType:    ContainerTypeContainer,
		AnnotationSandboxID:        in.SandboxID,
		AnnotationContainerName:    in.Container.Name,
		AnnotationSandboxName:      pod.Name,
		AnnotationSandboxNamespace: pod.Namespace,
		AnnotationSandboxUID:       pod.UID,
		AnnotationImageName:        in.Container.Image,
	})
	return a
}

// buildResources deep-copies the container's resources (the spec must
// not alias the caller's configuration) and puts the device rules first.
func buildResources(r *specs.LinuxResources, privileged bool) (*specs.LinuxResources, error) {
	out := &specs.LinuxResources{}
	if r != nil {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("copy Resources: %w", err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("copy Resources: %w", err)
		}
	}
	out.Devices = append(DeviceRules(privileged), out.Devices...)
	return out, nil
}

// DeviceRules returns the device cgroup rules of a container: deny
// everything, then allow what runc allows every container (mknod of any
// node; read, write and mknod of /dev/null, zero, full, random, urandom,
// tty, ptmx and the pts range). Privileged containers may use any device.
func DeviceRules(privileged bool) []specs.LinuxDeviceCgroup {
	if privileged {
		return []specs.LinuxDeviceCgroup{{Allow: true, Type: "a", Access: "rwm"}}
	}
	dev := func(major, minor int64) specs.LinuxDeviceCgroup {
		r := specs.LinuxDeviceCgroup{Allow: true, Type: "c", Major: &major, Access: "rwm"}
		if minor >= 0 {
			r.Minor = &minor
		}
		return r
	}
	return []specs.LinuxDeviceCgroup{
		{Allow: false, Type: "a", Access: "rwm"},
		{Allow: true, Type: "c", Access: "m"},
		{Allow: true, Type: "b", Access: "m"},
		dev(1, 3),    // /dev/null
		dev(1, 5),    // /dev/zero
		dev(1, 7),    // /dev/full
		dev(1, 8),    // /dev/random
		dev(1, 9),    // /dev/urandom
		dev(5, 0),    // /dev/tty
		dev(5, 2),    // /dev/ptmx
		dev(136, -1), // /dev/pts/*
	}
}
