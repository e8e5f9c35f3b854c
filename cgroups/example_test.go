package cgroups_test

import (
	"context"
	"fmt"
	"log"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/cgroups"
)

// The kubelet's use of a Tree over a pod's life: the pod cgroup in its QoS
// tier, a container cgroup, OOM events for it, and removal at the end.
func ExampleNew() {
	ctx := context.Background()
	tr, err := cgroups.New(cgroups.WithRoot("/kubepods"), cgroups.WithPodPidsLimit(4096))
	if err != nil {
		log.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "2b1c"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		}}},
	}
	parent, err := tr.EnsurePod(ctx, pod) // /kubepods/burstable/pod2b1c
	if err != nil {
		log.Fatal(err)
	}
	ctr, err := tr.EnsureContainer(ctx, parent, "app", tr.ContainerResources(&pod.Spec.Containers[0]))
	if err != nil {
		log.Fatal(err)
	}
	oom, err := tr.WatchOOM(ctx, ctr)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for ev := range oom {
			fmt.Println("OOMKilled in", ev.Path)
		}
	}()
	// ... the runtime starts the container in ctr ...
	if err := tr.Remove(ctx, parent); err != nil {
		log.Fatal(err)
	}
}

// PodResources is the pure mapping from a pod to its cgroup values.
func ExamplePodResources() {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}}}}
	r := cgroups.PodResources(pod, cgroups.PodOptions{EnforceCPULimits: true})
	fmt.Println("cpu.shares", *r.CPU.Shares)
	fmt.Println("cfs quota/period", *r.CPU.Quota, *r.CPU.Period)
	fmt.Println("memory limit", *r.Memory.Limit)
	fmt.Println("cpu.weight (v2)", cgroups.SharesToWeight(*r.CPU.Shares))
	// Output:
	// cpu.shares 512
	// cfs quota/period 50000 100000
	// memory limit 67108864
	// cpu.weight (v2) 20
}
