// Package sandbox is steps 12 and 14 of the birth sequence: the
// CRI-shaped SandboxRunner that creates a pod's namespaces (pinned, or with
// a pause process as PID 1) and forks its containers into them on an
// overlay root filesystem, inside their cgroups — and step 17 in reverse.
//
// This package holds the contract only: the SandboxRunner interface, the
// optional Execer (exec probes and hooks) and EventSource (exit events for
// the kubelet's relist), and the configuration and status types, which
// mirror CRI's PodSandboxConfig, ContainerConfig and ContainerStatus once
// the kubelet has resolved the pod spec. The kubelet depends on nothing
// else. Implementations:
//
//   - sandbox/native: podkit's own runtime on the Linux kernel — pinned
//     namespaces, its own container init, one supervisor per node that
//     outlives the kubelet; runc or crun per runtime class through
//     sandbox/oci.
//   - sandbox/fake: in memory, scripted, for unprivileged tests and
//     thousand-node simulations.
//
// Supporting packages: sandbox/ocispec turns a ContainerConfig into an OCI
// runtime spec (shared by the native init and runc/crun), sandbox/crilog
// writes and reads CRI log files, and sandbox/sandboxtest is the
// conformance suite every implementation runs.
package sandbox
