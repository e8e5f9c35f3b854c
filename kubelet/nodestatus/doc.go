// Package nodestatus is the kubelet's node agent toward the control plane:
// it registers the Node, keeps its status true to the machine, and
// heartbeats. It comes before step 6 of the birth sequence: the scheduler
// places pods only on nodes that are Ready, have room in their
// allocatable and are not under pressure, and the kubelet admits a pod
// (step 7) against the allocatable this package reports (Controller.Node).
//
// It follows the kubelet's kubelet_node_status.go, nodestatus setters and
// node lease controller:
//
//   - Registration creates the Node with the kubelet's labels
//     (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and
//     their beta twins, plus Config.Labels), taints, spec.podCIDR when one
//     is configured, and a full status. An existing Node is reconciled as
//     the kubelet does: the default labels, the controller-managed-attach
//     annotation, a pod CIDR it lacks (one it has cannot change and wins).
//     Attempts back off from 100ms to 7s.
//   - Status, computed every StatusUpdateFrequency (10s): addresses
//     (configured, or an InternalIP detected from the default-route
//     interface without network traffic, plus Hostname), capacity (cpu,
//     memory, ephemeral-storage of the state filesystem, hugepages, pods =
//     MaxPods) and allocatable = capacity − Reserved − hard eviction
//     thresholds (memory.available 100Mi from memory, nodefs.available 10%
//     from ephemeral-storage) − hugepages from memory, never negative;
//     nodeInfo (versions, OS, kernel, OS image, machine, system and boot
//     IDs); daemonEndpoints; the 50 largest images with at most 5 names
//     each; and the conditions MemoryPressure, DiskPressure, PIDPressure
//     and Ready with Kubernetes' reasons and messages
//     (KubeletHasSufficientMemory "kubelet has sufficient memory
//     available", KubeletReady "kubelet is posting ready status", ...).
//   - Posting: the status goes to the nodes/status subresource only when
//     something other than heartbeat times changed, or every
//     StatusReportFrequency (5m) — the lease is the heartbeat. A
//     condition's lastHeartbeatTime moves on every computation,
//     lastTransitionTime only when its status flips. Conflicts are
//     retried on a fresh read.
//   - Pressure follows the eviction manager: a signal below its hard
//     threshold turns the condition on, and it stays on until
//     PressureTransitionPeriod (5m) passes without another such
//     observation, so a node at the edge does not flap.
//   - The lease kube-node-lease/<node> (holderIdentity the node,
//     leaseDurationSeconds 40, owned by the Node so it goes with it) is
//     renewed every RenewInterval (10s) from the last copy without a GET,
//     refetched on conflict, and retried with backoff when the API server
//     is unreachable.
//
// Updates use Update on a freshly read object rather than the kubelet's
// strategic merge patch: the status subresource of podkit's API server
// takes status only, so labels the kubelet must restore go through the
// main resource, and an update with the read resourceVersion cannot
// overwrite a concurrent writer.
//
// Everything time-related runs on an injectable clock (k8s.io/utils
// clock), so tests step a fake clock through heartbeats and transition
// periods; the host is behind the Machine interface (HostMachine reads
// /proc, /sys, /etc and statfs).
package nodestatus
