package qos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestPodQOSClass(t *testing.T) {
	tests := []struct {
		name string
		res  []corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"no resources", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		// Defaulting copies limits into missing requests before the class is computed;
		// undefaulted, limits alone make Burstable, as in Kubernetes.
		{"limits only, not defaulted", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}}, corev1.PodQOSBurstable},
		{"requests equal limits", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"requests below limits", []corev1.ResourceRequirements{{Requests: rl("500m", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSBurstable},
		{"cpu limit only", []corev1.ResourceRequirements{{Limits: rl("1", "")}}, corev1.PodQOSBurstable},
		{"one guaranteed one besteffort", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}, {}}, corev1.PodQOSBurstable},
		{"requests only", []corev1.ResourceRequirements{{Requests: rl("100m", "")}}, corev1.PodQOSBurstable},
		{"zero requests are ignored", []corev1.ResourceRequirements{{Requests: rl("0", "0")}}, corev1.PodQOSBestEffort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			for i, r := range tt.res {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			assert.Equal(t, tt.want, PodQOSClass(pod))
		})
	}
}
