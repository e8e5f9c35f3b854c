// Package qos computes a pod's Quality of Service class exactly as Kubernetes
// does (pkg/apis/core/helper/qos): the API server records it in the pod's
// status at creation, and the cgroups stage uses it to pick the pod's tier.
package qos

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// supported are the resources that decide the class.
var supported = map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}

// PodQOSClass returns Guaranteed, Burstable or BestEffort for pod.
//
// BestEffort: no container (init or app) requests or limits cpu or memory.
// Guaranteed: every container has cpu and memory limits, and requests equal
// to them (requests default to limits). Otherwise Burstable. Pod-level
// resources, when set, decide instead of the containers'.
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		return classOf([]corev1.ResourceRequirements{*pod.Spec.Resources})
	}
	var all []corev1.ResourceRequirements
	for _, c := range pod.Spec.InitContainers {
		all = append(all, c.Resources)
	}
	for _, c := range pod.Spec.Containers {
		all = append(all, c.Resources)
	}
	return classOf(all)
}

func classOf(all []corev1.ResourceRequirements) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	zero := resource.Quantity{}
	guaranteed := true
	for _, r := range all {
		for name, q := range r.Requests {
			if !supported[name] || q.Cmp(zero) != 1 {
				continue
			}
			add(requests, name, q)
		}
		seen := map[corev1.ResourceName]bool{}
		for name, q := range r.Limits {
			if !supported[name] || q.Cmp(zero) != 1 {
				continue
			}
			seen[name] = true
			add(limits, name, q)
		}
		if len(seen) != len(supported) {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if cur, ok := list[name]; ok {
		cur.Add(q)
		list[name] = cur
		return
	}
	list[name] = q.DeepCopy()
}
