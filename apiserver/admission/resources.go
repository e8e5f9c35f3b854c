package admission

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkit/podkit/apiserver/defaults"
)

// Resource list arithmetic shared by LimitRanger and ResourceQuota. Results
// are new lists; inputs are never modified.

func addLists(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		if cur, ok := out[name]; ok && !cur.IsZero() {
			cur.Add(q)
			out[name] = cur
		} else {
			// Adding to nothing (or to zero) keeps the addend's format, so
			// memory stays "64Mi" instead of becoming "67108864".
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// subtractFloorZero returns a-b per resource of a, never below zero.
func subtractFloorZero(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		v := q.DeepCopy()
		if sub, ok := b[name]; ok {
			v.Sub(sub)
			if v.Sign() < 0 {
				v = resource.Quantity{Format: q.Format}
			}
		}
		out[name] = v
	}
	return out
}

// maskList keeps the resources of rl that are in names.
func maskList(rl corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := rl[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

func removeZeros(rl corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range rl {
		if !q.IsZero() {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// negativeResources names the resources of rl below zero.
func negativeResources(rl corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name, q := range rl {
		if q.Sign() < 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// exceeding names the resources of a larger than the same resource of b;
// resources b does not list are not constrained.
func exceeding(a, b corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name, q := range a {
		if limit, ok := b[name]; ok && q.Cmp(limit) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(rl))
	for name := range rl {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// prettyPrint formats a list as Kubernetes' quota messages do:
// name=quantity pairs sorted by name, joined by commas.
func prettyPrint(rl corev1.ResourceList) string {
	parts := make([]string, 0, len(rl))
	for _, name := range sortedNames(rl) {
		q := rl[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

func joinNames(names []corev1.ResourceName) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}

// podResourceOptions select how a pod's total is counted.
type podResourceOptions struct {
	// overhead adds spec.overhead (requests; limits only where one is set).
	overhead bool
	// podLevel reports which spec.resources entries override the
	// containers' total.
	podLevel func(corev1.ResourceName) bool
}

// podTotals returns what a pod requests and is limited to altogether.
func podTotals(pod *corev1.Pod, opts podResourceOptions) (requests, limits corev1.ResourceList) {
	requests, limits = defaults.ContainerResources(&pod.Spec)
	if r := pod.Spec.Resources; r != nil && opts.podLevel != nil {
		for name, q := range r.Requests {
			if opts.podLevel(name) {
				requests[name] = q.DeepCopy()
			}
		}
		for name, q := range r.Limits {
			if opts.podLevel(name) {
				limits[name] = q.DeepCopy()
			}
		}
	}
	if opts.overhead && pod.Spec.Overhead != nil {
		requests = addLists(requests, pod.Spec.Overhead)
		for name, q := range pod.Spec.Overhead {
			if cur, ok := limits[name]; ok {
				cur.Add(q)
				limits[name] = cur
			}
		}
	}
	return requests, limits
}

func isCPUOrMemory(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
