package cgroups

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/internal/qos"
)

// Constants of the kubelet's CFS mapping (pkg/kubelet/cm).
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	MilliCPUToCPU  = 1000
	QuotaPeriod    = 100000 // µs: 100 ms
	MinQuotaPeriod = 1000   // µs: the kernel's minimum quota
)

// MilliCPUToShares converts a cpu request to cpu.shares: 1024 per CPU,
// clamped to the kernel's 2..262144; no request gets the minimum, 2.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / MilliCPUToCPU
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a cpu limit to a CFS quota over period (µs): 0
// for no limit, at least 1 ms otherwise.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU <= 0 {
		return 0
	}
	quota := milliCPU * period / MilliCPUToCPU
	if quota < MinQuotaPeriod {
		quota = MinQuotaPeriod
	}
	return quota
}

// SharesToWeight converts cpu.shares to cgroup v2 cpu.weight with the
// kubelet's linear mapping of [2, 262144] onto [1, 10000].
func SharesToWeight(shares uint64) uint64 {
	if shares < MinShares {
		shares = MinShares
	}
	if shares > MaxShares {
		shares = MaxShares
	}
	return 1 + (shares-2)*9999/262142
}

// PodOptions are the kubelet settings that shape a pod cgroup.
type PodOptions struct {
	// EnforceCPULimits is the kubelet's --cpu-cfs-quota (default true):
	// when false a pod's quota is -1 (unlimited).
	EnforceCPULimits bool
	// QuotaPeriod is the CFS period in µs (default 100000).
	QuotaPeriod uint64
	// PidsLimit is the kubelet's podPidsLimit; <= 0 leaves pids unlimited.
	PidsLimit int64
}

// PodResources maps a pod to its cgroup's resources exactly as the kubelet's
// ResourceConfigForPod does: requests and limits summed over containers
// (init containers and sidecars as the scheduler counts them, pod-level
// resources and overhead included); cpu shares from requests (2 for
// BestEffort); for Guaranteed pods the CFS quota and the memory limit; for
// Burstable pods the quota only when every container limits cpu and the
// memory limit only when every container limits memory.
func PodResources(pod *corev1.Pod, o PodOptions) *specs.LinuxResources {
	if o.QuotaPeriod == 0 {
		o.QuotaPeriod = QuotaPeriod
	}
	reqs := podRequests(pod)
	limits := podLimits(pod)
	cpuDeclared, memDeclared := limitsDeclared(pod)
	if pr := pod.Spec.Resources; pr != nil {
		if !pr.Limits.Cpu().IsZero() {
			cpuDeclared = true
		}
		if !pr.Limits.Memory().IsZero() {
			memDeclared = true
		}
	}
	var cpuReq, cpuLim, memLim int64
	if q, ok := reqs[corev1.ResourceCPU]; ok {
		cpuReq = q.MilliValue()
	}
	if q, ok := limits[corev1.ResourceCPU]; ok {
		cpuLim = q.MilliValue()
	}
	if q, ok := limits[corev1.ResourceMemory]; ok {
		memLim = q.Value()
	}
	shares := MilliCPUToShares(cpuReq)
	quota := MilliCPUToQuota(cpuLim, int64(o.QuotaPeriod))
	if !o.EnforceCPULimits {
		quota = -1
	}
	period := o.QuotaPeriod
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	switch qos.PodQOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		r.CPU.Shares, r.CPU.Quota, r.CPU.Period = &shares, &quota, &period
		r.Memory = &specs.LinuxMemory{Limit: &memLim}
	case corev1.PodQOSBurstable:
		r.CPU.Shares = &shares
		if cpuDeclared {
			r.CPU.Quota, r.CPU.Period = &quota, &period
		}
		if memDeclared {
			r.Memory = &specs.LinuxMemory{Limit: &memLim}
		}
	default:
		min := uint64(MinShares)
		r.CPU.Shares = &min
	}
	if o.PidsLimit > 0 {
		l := o.PidsLimit
		r.Pids = &specs.LinuxPids{Limit: &l}
	}
	return r
}

// ContainerOptions are the kubelet and host settings that shape a container
// cgroup.
type ContainerOptions struct {
	// EnforceCPULimits is the kubelet's --cpu-cfs-quota.
	EnforceCPULimits bool
	// QuotaPeriod is the CFS period in µs (default 100000).
	QuotaPeriod uint64
	// CgroupV2 selects the v2 mapping (swap and OOM group via unified keys).
	CgroupV2 bool
	// SwapController tells whether the host accounts swap (v1
	// memory.memsw.*, v2 memory.swap.max); without it swap is left alone.
	SwapController bool
	// SingleProcessOOMKill keeps the kernel's per-process OOM kill on v2
	// instead of killing the whole container (memory.oom.group=1).
	SingleProcessOOMKill bool
}

// ContainerResources maps a container to its cgroup's resources as the
// kubelet asks the runtime to (kuberuntime's container resources): cpu
// shares from the request, or from the limit when only a limit is set; a
// CFS quota from the limit; the memory limit; no swap beyond the limit
// (NoSwap, the kubelet's default); and on v2 the whole container is the
// OOM kill unit.
func ContainerResources(c *corev1.Container, o ContainerOptions) *specs.LinuxResources {
	if o.QuotaPeriod == 0 {
		o.QuotaPeriod = QuotaPeriod
	}
	req, lim := c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu()
	if req.IsZero() && !lim.IsZero() {
		req = lim
	}
	shares := MilliCPUToShares(req.MilliValue())
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}
	if o.EnforceCPULimits {
		period := o.QuotaPeriod
		r.CPU.Period = &period
		if q := MilliCPUToQuota(lim.MilliValue(), int64(period)); q > 0 {
			r.CPU.Quota = &q
		}
	}
	if mem := c.Resources.Limits.Memory().Value(); mem > 0 {
		r.Memory = &specs.LinuxMemory{Limit: &mem}
		if o.SwapController && !o.CgroupV2 {
			swap := mem // memory+swap == memory: no swap
			r.Memory.Swap = &swap
		}
	}
	if o.CgroupV2 {
		r.Unified = map[string]string{}
		if o.SwapController {
			r.Unified["memory.swap.max"] = "0"
		}
		if !o.SingleProcessOOMKill {
			r.Unified["memory.oom.group"] = "1"
		}
		if len(r.Unified) == 0 {
			r.Unified = nil
		}
	}
	return r
}

// podRequests sums requests as the scheduler does: app containers and
// sidecars (restartable init containers) add up; each regular init
// container counts with the sidecars started before it, and the pod needs
// the larger of the two; pod-level requests replace the sum; overhead is
// added.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	out := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	if pr := pod.Spec.Resources; pr != nil {
		applyPodLevel(out, pr.Requests)
	}
	addList(out, pod.Spec.Overhead)
	return out
}

// podLimits aggregates limits the same way; overhead is added only to
// limits that are set.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	out := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	if pr := pod.Spec.Resources; pr != nil {
		applyPodLevel(out, pr.Limits)
	}
	for name, q := range pod.Spec.Overhead {
		if v, ok := out[name]; ok && !v.IsZero() {
			v.Add(q)
			out[name] = v
		}
	}
	return out
}

func aggregate(pod *corev1.Pod, get func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(out, get(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		use := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(out, get(c))
			addList(sidecars, get(c))
			addList(use, sidecars)
		} else {
			addList(use, get(c))
			addList(use, sidecars)
		}
		maxList(initMax, use)
	}
	maxList(out, initMax)
	return out
}

func applyPodLevel(out, pod corev1.ResourceList) {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := pod[name]; ok {
			out[name] = q.DeepCopy()
		}
	}
}

func addList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; ok {
			cur.Add(q)
			dst[name] = cur
		} else {
			dst[name] = q.DeepCopy()
		}
	}
}

func maxList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// limitsDeclared tells whether every container limits cpu and memory, as
// the kubelet checks it: app containers by their own limits, init
// containers by their limits plus those of the sidecars started before
// them.
func limitsDeclared(pod *corev1.Pod) (cpu, mem bool) {
	cpu, mem = true, true
	check := func(l corev1.ResourceList) {
		if l.Cpu().IsZero() {
			cpu = false
		}
		if l.Memory().IsZero() {
			mem = false
		}
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].Resources.Limits)
	}
	sidecars := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		use := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(sidecars, c.Resources.Limits)
		} else {
			addList(use, c.Resources.Limits)
		}
		addList(use, sidecars)
		check(use)
	}
	return cpu, mem
}

// milliCPURequest is the pod's cpu request in millicores (for the
// burstable tier's shares).
func milliCPURequest(pod *corev1.Pod) int64 {
	q, ok := podRequests(pod)[corev1.ResourceCPU]
	if !ok {
		return 0
	}
	return q.MilliValue()
}
