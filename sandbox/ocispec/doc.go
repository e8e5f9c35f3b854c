// Package ocispec turns a resolved container configuration into an OCI
// runtime-spec document (*specs.Spec). It is the hinge of step 14 of the
// birth sequence: after the image is unpacked and the container's overlay
// root filesystem is mounted (steps 10-11) and the sandbox's namespaces
// exist (step 12), the runtime calls Generate, then hands the spec either
// to podkit's own container init (sandbox/native) or, written as
// config.json in a bundle, to runc or crun (sandbox/oci). One generator
// for both runtimes keeps their behaviour identical, so every choice here
// is one runc and crun accept.
//
// The defaults are those a Kubernetes node running containerd's CRI
// plugin with runc produces, because that is what workloads expect:
//
//   - process: the Kubernetes merge of command/args with the image's
//     entrypoint/cmd (Command); the image environment overridden by name by
//     the container's, PATH defaulted and HOSTNAME set (Env); the working
//     directory of the container, else the image, else "/"; the user and
//     groups resolved against the image's /etc/passwd and /etc/group
//     (ResolveUser); containerd's default capability set changed by
//     add/drop (Capabilities) in the bounding, effective and permitted
//     sets, with empty inheritable and ambient sets; no_new_privs only when
//     privilege escalation is disallowed; no rlimits (the container
//     inherits the runtime's, which must never exceed the host's hard
//     limits) and no OOM score adjustment (the cgroup stage owns that).
//   - mounts: /proc, a small /dev tmpfs, /dev/pts, /dev/mqueue, /sys and
//     /sys/fs/cgroup read-only, /dev/shm (the sandbox's shared one, or a
//     private 64 MiB tmpfs), the sandbox's /etc/hostname, /etc/hosts and
//     /etc/resolv.conf, then the volumes. Volumes and the sandbox files are
//     sorted by the depth of their destination, so a parent is mounted
//     before its children, and a supplied mount replaces a default one at
//     the same place. Propagation maps None to rprivate, HostToContainer to
//     rslave and Bidirectional to rshared; like containerd, the source must
//     sit on a shared (or, for rslave, a slave) mount and the root's
//     propagation is raised to match.
//   - masked and read-only paths: the Kubernetes/containerd defaults,
//     none for privileged containers or procMount: Unmasked.
//   - devices: linux.devices is empty: like runc and crun, the runtime
//     itself creates /dev/null, zero, full, random, urandom and tty and
//     the /dev/ptmx link. The device cgroup denies everything and then
//     allows those, the pts range, and mknod of any node (runc's set);
//     privileged containers may use every device but, unlike containerd's
//     default, get no host device nodes (its
//     privileged_without_host_devices mode).
//   - namespaces: a new mount namespace always; network, IPC, UTS and PID
//     joined by path, created new, or left out to share the node's.
//   - annotations: the container's own, then the io.kubernetes.cri.* keys
//     containerd sets, which tools such as cAdvisor read.
//   - ociVersion is SpecVersion (1.0.2), not the library's newest: the
//     spec uses nothing newer, and Debian 12's crun rejects versions
//     above 1.1.
//
// User and group names come from files inside the image, which an
// attacker controls. They are opened with openat2(RESOLVE_IN_ROOT), so a
// symbolic link such as /etc/passwd -> /etc/shadow resolves inside the
// root filesystem and never reaches the host's files, and only regular
// files of bounded size are read.
//
// Generate touches the host only to read: the rootfs's passwd and group
// files, the existence and mount propagation of volume sources, and, when
// a container asks for every capability, the capabilities of the calling
// process. It creates nothing; the runtime owns every side effect.
package ocispec
