// Package native is podkit's own container runtime: a sandbox.SandboxRunner
// that makes pod sandboxes and containers directly from Linux primitives —
// steps 12 to 14 and 17 of the birth sequence.
//
// # A pod sandbox
//
// RunPodSandbox creates the pod's network, IPC and UTS namespaces and pins
// each with a bind mount under Root/sandboxes/<id>/ns, so they live without
// any process; sets the hostname and the pod's namespaced sysctls; mounts
// the pod's /dev/shm (a tmpfs its containers share); calls the Networker on
// the network namespace; and writes resolv.conf, hosts and hostname for the
// containers. Pods that share their process namespace (and every pod with
// Config.PauseAlways) get a pause process: PID 1 of the pod's PID
// namespace, created before the containers, killed after them, reaping
// orphaned zombies. On amd64 it is a few hundred bytes of machine code, so it
// costs the node almost nothing.
//
// # A container
//
// CreateContainer mounts the rootfs overlay (from the Snapshotter) at
// Root/containers/<id>/rootfs, creates the container's cgroup under the
// pod's, generates an OCI runtime spec (package sandbox/ocispec) and asks
// the supervisor to create the process: a re-exec of this binary that joins
// the sandbox's namespaces, makes new mount and PID namespaces, is moved into
// its cgroup before it does anything else, builds the container's mount
// namespace (proc, read-only sys, a minimal /dev, volumes, masked and
// read-only paths) and pivot_roots into the rootfs. It then waits.
// StartContainer releases it: it takes the container's user, groups,
// capabilities and no_new_privs and execs the entrypoint, which is PID 1 of
// its PID namespace. The same spec can be run by runc or crun instead
// (package sandbox/oci, selected per pod by its runtime class handler).
//
// # Supervision: one supervisor per node
//
// Something must be the parent of every container process, to learn its exit
// status, and must hold its stdout and stderr pipes, to write the CRI log
// files. containerd and CRI-O use a shim per container (conmon is C, ~1 MiB;
// containerd's Go shim ~10 MiB). A Go process costs at least 2 MiB of RSS,
// and a re-exec of a binary that links client-go about 20 MiB, so a Go shim
// per pod cannot meet podkit's budget of 2 MiB per pod. podkit therefore
// runs one supervisor per runtime root (one per node): a detached re-exec of
// the binary (its own session, outliving the kubelet) marked as a child
// subreaper, so it is the parent of every container init it forks and
// adopts the ones runc or crun create. It copies each container's output to
// its CRI log, records each exit (code, signal, time and whether the OOM
// killer struck, from the cgroup's oom_kill counter) on disk, and
// streams exits to connected runtimes. A pod costs it a few goroutines and
// buffers; docs/benchmarks.md has the number.
//
// The kubelet (the process hosting this Runtime) may exit or crash at any
// time: containers keep running, logs keep flowing, exits are recorded, and
// a new Runtime on the same Root re-adopts every sandbox and container from
// its records and asks the supervisor for their state. The price of sharing
// one supervisor is that it is a single point of failure for exit codes: if
// the supervisor itself is killed, containers keep running but their exit
// codes can no longer be learned (they are reported as exit 255 with a
// message saying so). The supervisor exits by itself once it has no
// containers and no runtime connected.
//
// # The re-exec entry point
//
// The supervisor, the container init and the exec helper are this binary
// re-executed in a special mode. Every program that uses this package must
// call Init first thing in main, and tests in TestMain:
//
//	func main() {
//		native.Init()
//		...
//	}
//
// Init returns at once in a normal process and never returns in a re-exec.
package native
