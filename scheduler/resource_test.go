package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rlist(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	c := func(kv ...string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: rlist(kv...)}}
	}
	sidecar := func(kv ...string) corev1.Container { x := c(kv...); x.RestartPolicy = &always; return x }
	tests := []struct {
		name         string
		spec         corev1.PodSpec
		cpu, mem     int64
		nzCPU, nzMem int64
		gpu          int64
		wantZero     bool
	}{
		{name: "nothing", spec: corev1.PodSpec{Containers: []corev1.Container{c()}}, nzCPU: 100, nzMem: 200 << 20, wantZero: true},
		{name: "sum of app containers", spec: corev1.PodSpec{Containers: []corev1.Container{c("cpu", "100m", "memory", "1Mi"), c("cpu", "200m")}},
			cpu: 300, mem: 1 << 20, nzCPU: 300, nzMem: 1<<20 + 200<<20},
		{name: "init container larger", spec: corev1.PodSpec{InitContainers: []corev1.Container{c("cpu", "2")}, Containers: []corev1.Container{c("cpu", "500m")}},
			cpu: 2000, nzCPU: 2000, nzMem: 200 << 20},
		{name: "sidecar adds to apps and later inits", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("cpu", "500m"), c("cpu", "1")},
			Containers:     []corev1.Container{c("cpu", "500m")}},
			cpu: 1500, nzCPU: 1500, nzMem: 400 << 20},
		{name: "overhead", spec: corev1.PodSpec{Containers: []corev1.Container{c("cpu", "1")}, Overhead: rlist("cpu", "250m", "memory", "10Mi")},
			cpu: 1250, mem: 10 << 20, nzCPU: 1250, nzMem: 210 << 20},
		{name: "explicit zero is not defaulted", spec: corev1.PodSpec{Containers: []corev1.Container{c("cpu", "0", "memory", "0")}}, wantZero: true},
		{name: "extended resource", spec: corev1.PodSpec{Containers: []corev1.Container{c("example.com/gpu", "2")}}, gpu: 2, nzCPU: 100, nzMem: 200 << 20},
		{name: "pod-level requests", spec: corev1.PodSpec{Containers: []corev1.Container{c("cpu", "1")},
			Resources: &corev1.ResourceRequirements{Requests: rlist("cpu", "3")}}, cpu: 3000, nzCPU: 3000, nzMem: 200 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tt.spec}
			r := PodRequests(p, false)
			nz := PodRequests(p, true)
			assert.Equal(t, tt.cpu, r.MilliCPU)
			assert.Equal(t, tt.mem, r.Memory)
			assert.Equal(t, tt.nzCPU, nz.MilliCPU)
			assert.Equal(t, tt.nzMem, nz.Memory)
			assert.Equal(t, tt.gpu, r.ScalarResources["example.com/gpu"])
			assert.Equal(t, tt.wantZero, r.IsZero())
		})
	}
}

func TestIsScalarResourceName(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{
		"cpu": false, "memory": false, "storage": false, "example.com/gpu": true, "hugepages-2Mi": true,
		"kubernetes.io/batch-cpu": true, "requests.example.com/gpu": false, "attachable-volumes-aws-ebs": true,
	} {
		assert.Equal(t, want, IsScalarResourceName(name), string(name))
	}
}
