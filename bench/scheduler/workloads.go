package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloads build the i-th pod of a run on a cluster of the given size.
var workloads = map[string]func(i, nodes int) *corev1.Pod{
	"basic": func(i, _ int) *corev1.Pod { return basePod(i) },
	"spread": func(i, _ int) *corev1.Pod {
		p := basePod(i)
		p.Labels = map[string]string{"app": fmt.Sprintf("app-%d", i%10)}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
		}}
		return p
	},
	"antiaffinity": func(i, nodes int) *corev1.Pod {
		p := basePod(i)
		p.Labels = map[string]string{"group": fmt.Sprintf("g%d", i/max(nodes/2, 1))}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelHostname,
			}},
		}}
		return p
	},
}

func basePod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi"),
			}},
		}}},
	}
}
