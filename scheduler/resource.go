package scheduler

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Requests the scheduler counts for containers that request nothing, when
// spreading by load (scoring only; filtering uses the real requests).
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is an amount of schedulable resources in plain integers: milli
// CPU, bytes, pod count and scalar (extended, hugepages) resources.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int64
	// ScalarResources holds extended resources (example.com/gpu),
	// hugepages-* and other prefixed resources.
	ScalarResources map[corev1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl corev1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds every resource of rl.
func (r *Resource) Add(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case corev1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds v of a scalar resource.
func (r *Resource) AddScalar(name corev1.ResourceName, v int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[corev1.ResourceName]int64{}
	}
	r.ScalarResources[name] += v
}

// AddResource adds o to r.
func (r *Resource) AddResource(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, v)
	}
}

// SubResource subtracts o from r.
func (r *Resource) SubResource(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, -v)
	}
}

// SetMax raises every resource of r to at least o's.
func (r *Resource) SetMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	r.AllowedPodNumber = max(r.AllowedPodNumber, o.AllowedPodNumber)
	for k, v := range o.ScalarResources {
		if v > r.ScalarResources[k] {
			if r.ScalarResources == nil {
				r.ScalarResources = map[corev1.ResourceName]int64{}
			}
			r.ScalarResources[k] = v
		}
	}
}

// Get returns the amount of a resource by name.
func (r *Resource) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	case corev1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case corev1.ResourcePods:
		return r.AllowedPodNumber
	}
	return r.ScalarResources[name]
}

// IsZero reports whether r requests nothing at all.
func (r *Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 {
		return false
	}
	for _, v := range r.ScalarResources {
		if v != 0 {
			return false
		}
	}
	return true
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	if r.ScalarResources != nil {
		m := make(map[corev1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			m[k] = v
		}
		r.ScalarResources = m
	}
	return r
}

// IsScalarResourceName reports whether name is counted as a scalar
// resource: extended resources (a domain-qualified name), prefixed native
// resources, hugepages-* and attachable-volumes-*.
func IsScalarResourceName(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) ||
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, "attachable-volumes-")
}

// PodRequests returns what pod requests, as kube-scheduler counts it: the
// sum of app containers and sidecars (restartable init containers), or the
// largest init container step if larger (an init container runs with the
// sidecars started before it), plus the pod overhead. Pod-level requests
// (spec.resources) replace the containers' for the resources they set.
//
// With nonZero, a container that does not set a cpu or memory request
// counts DefaultMilliCPURequest or DefaultMemoryRequest, which is how
// scoring spreads best-effort pods.
func PodRequests(pod *corev1.Pod, nonZero bool) Resource {
	var apps Resource
	for i := range pod.Spec.Containers {
		apps.AddResource(ptr(containerRequests(&pod.Spec.Containers[i], nonZero)))
	}
	var sidecars, initMax Resource
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := containerRequests(c, nonZero)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			apps.AddResource(&cr)
			sidecars.AddResource(&cr)
			cr = sidecars.Clone()
		} else {
			cr.AddResource(&sidecars)
		}
		initMax.SetMax(&cr)
	}
	apps.SetMax(&initMax)
	if pr := pod.Spec.Resources; pr != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := pr.Requests[name]; ok {
				if name == corev1.ResourceCPU {
					apps.MilliCPU = q.MilliValue()
				} else {
					apps.Memory = q.Value()
				}
			}
		}
	}
	if pod.Spec.Overhead != nil {
		apps.Add(pod.Spec.Overhead)
	}
	return apps
}

func containerRequests(c *corev1.Container, nonZero bool) Resource {
	r := NewResource(c.Resources.Requests)
	if nonZero {
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			r.Memory = DefaultMemoryRequest
		}
	}
	return r
}

func ptr[T any](v T) *T { return &v }
