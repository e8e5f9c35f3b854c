// Package cgroups builds a pod's cgroups the way the kubelet does, on
// cgroup v1 and cgroup v2 (through github.com/containerd/cgroups/v3), and
// reports their usage and OOM kills.
//
// In podkit's birth sequence the kubelet, having accepted a pod, asks a
// Manager for the pod's cgroup (step 8) before the sandbox exists, gives the
// runtime a container cgroup under it for every container (step 14), reads
// Stats for the summary API, turns OOM events into reason OOMKilled, and
// at termination removes the pod's cgroup last (step 17).
//
// The tree follows the kubelet's cgroupfs driver with cgroups-per-qos:
//
//	<root>                       default /kubepods; node allocatable
//	<root>/pod<uid>              Guaranteed pods
//	<root>/burstable             cpu shares = sum of burstable requests
//	<root>/burstable/pod<uid>    Burstable pods
//	<root>/besteffort            cpu shares = 2
//	<root>/besteffort/pod<uid>   BestEffort pods
//	<pod>/<container>            one child per container
//
// Values are mapped as Kubernetes maps them (PodResources,
// ContainerResources): cpu requests → cpu.shares (v1) or cpu.weight (v2,
// with the kubelet's linear conversion), cpu limits → a CFS quota over a
// 100 ms period, memory limits → the memory limit, a per-pod pids limit.
// Remove kills whatever is left inside, waits for it to be gone and then
// removes the directories, so nothing is left behind.
package cgroups
