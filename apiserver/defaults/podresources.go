package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ContainerResources returns what a pod's containers need altogether, the
// way the scheduler and Kubernetes' resource helpers count it: app
// containers and sidecars (init containers with restartPolicy Always) run
// side by side and add up, while each ordinary init container runs alone
// next to the sidecars started before it; the pod needs the larger of the
// two. Pod-level resources and overhead are not included.
func ContainerResources(spec *corev1.PodSpec) (requests, limits corev1.ResourceList) {
	return aggregate(spec, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }),
		aggregate(spec, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
}

func aggregate(spec *corev1.PodSpec, pick func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range spec.Containers {
		addTo(total, pick(&spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		var phase corev1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(total, pick(c))
			addTo(sidecars, pick(c))
			phase = sidecars
		} else {
			phase = corev1.ResourceList{}
			addTo(phase, pick(c))
			addTo(phase, sidecars)
		}
		maxInto(initPeak, phase)
	}
	maxInto(total, initPeak)
	return total
}

func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; ok {
			cur.Add(q)
			dst[name] = cur
		} else {
			dst[name] = q.DeepCopy()
		}
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// podLevelResource reports whether spec.resources may name the resource
// (PodLevelResources, on by default since Kubernetes 1.34).
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || isHugePages(name)
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func anyPodLevel(rl corev1.ResourceList) bool {
	for name := range rl {
		if podLevelResource(name) {
			return true
		}
	}
	return false
}

// podLevelResources completes partly specified pod-level resources from the
// containers, in the order Kubernetes does it: hugepage limits, then
// requests, then limits.
func podLevelResources(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || (len(r.Limits) == 0 && len(r.Requests) == 0) {
		return
	}
	ctrRequests, ctrLimits := ContainerResources(&p.Spec)

	// Hugepage limits summed over the containers become the pod's limit,
	// unless the pod states a request for them.
	hugeLimits := orNew(r.Limits)
	for name, q := range ctrLimits {
		if !isHugePages(name) {
			continue
		}
		if _, req := r.Requests[name]; req {
			continue
		}
		if _, ok := hugeLimits[name]; !ok {
			hugeLimits[name] = q.DeepCopy()
		}
	}
	if len(hugeLimits) > 0 {
		r.Limits = hugeLimits
	}

	// With pod-level limits, missing pod-level requests come from the
	// containers' requests (overcommittable resources), else the limit.
	if len(r.Limits) > 0 {
		reqs := orNew(r.Requests)
		for name, q := range ctrRequests {
			if _, ok := reqs[name]; !ok && podLevelResource(name) && !isHugePages(name) {
				reqs[name] = q.DeepCopy()
			}
		}
		for name, q := range r.Limits {
			if _, ok := reqs[name]; !ok && podLevelResource(name) {
				reqs[name] = q.DeepCopy()
			}
		}
		if len(reqs) > 0 {
			r.Requests = reqs
		}
	}

	// With pod-level requests but no pod-level limits, a limit every
	// container states adds up to the pod's limit.
	if anyPodLevel(r.Limits) || !anyPodLevel(r.Requests) {
		return
	}
	lims := orNew(r.Limits)
	for name, q := range ctrLimits {
		if _, ok := lims[name]; ok || !podLevelResource(name) || isHugePages(name) {
			continue
		}
		if allContainersLimit(&p.Spec, name) {
			lims[name] = q.DeepCopy()
		}
	}
	if len(lims) > 0 {
		r.Limits = lims
	}
}

func allContainersLimit(s *corev1.PodSpec, name corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}

// orNew returns rl, or a new empty list when rl is nil.
func orNew(rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return corev1.ResourceList{}
	}
	return rl
}
