package cgroups

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMilliCPUToShares(t *testing.T) {
	for in, want := range map[int64]uint64{
		0: 2, 1: 2, 2: 2, 3: 3, 100: 102, 250: 256, 1000: 1024, 1500: 1536,
		256000: 262144, 300000: 262144, -5: 2,
	} {
		assert.Equal(t, want, MilliCPUToShares(in), "%dm", in)
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	tests := []struct {
		milli, period, want int64
	}{
		{0, 100000, 0},
		{5, 100000, 1000},  // raised to the 1 ms minimum
		{10, 100000, 1000}, // exactly the minimum
		{200, 100000, 20000},
		{1000, 100000, 100000},
		{2500, 100000, 250000},
		{500, 50000, 25000},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, MilliCPUToQuota(tc.milli, tc.period), "%dm over %d", tc.milli, tc.period)
	}
}

func TestSharesToWeight(t *testing.T) {
	for in, want := range map[uint64]uint64{
		0: 1, 2: 1, 1024: 39, 102: 4, 256: 10, 262144: 10000, 300000: 10000, 512: 20,
	} {
		assert.Equal(t, want, SharesToWeight(in), "%d shares", in)
	}
}

type res map[corev1.ResourceName]string

func list(r res) corev1.ResourceList {
	if r == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range r {
		out[k] = resource.MustParse(v)
	}
	return out
}

func ctr(name string, req, lim res) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: list(req), Limits: list(lim)}}
}

func testPod(uid string, init, app []corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID(uid)},
		Spec:       corev1.PodSpec{InitContainers: init, Containers: app},
	}
}

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

const mi = 1 << 20

func TestPodResources(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := ctr("side", res{"cpu": "100m"}, res{"cpu": "200m", "memory": "32Mi"})
	sidecar.RestartPolicy = &always
	on := PodOptions{EnforceCPULimits: true, QuotaPeriod: QuotaPeriod}
	tests := []struct {
		name string
		pod  *corev1.Pod
		opts PodOptions
		want specs.LinuxResources
	}{
		{
			name: "guaranteed: shares, quota, period, memory",
			pod:  testPod("g", nil, []corev1.Container{ctr("a", res{"cpu": "500m", "memory": "64Mi"}, res{"cpu": "500m", "memory": "64Mi"})}),
			opts: on,
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(512), Quota: i64(50000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(64 * mi)},
			},
		},
		{
			name: "guaranteed without CFS enforcement: quota -1",
			pod:  testPod("g", nil, []corev1.Container{ctr("a", res{"cpu": "1", "memory": "64Mi"}, res{"cpu": "1", "memory": "64Mi"})}),
			opts: PodOptions{EnforceCPULimits: false},
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(1024), Quota: i64(-1), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(64 * mi)},
			},
		},
		{
			name: "burstable with every limit declared",
			pod: testPod("b", nil, []corev1.Container{
				ctr("a", res{"cpu": "250m", "memory": "64Mi"}, res{"cpu": "1", "memory": "128Mi"}),
				ctr("b", res{"cpu": "250m"}, res{"cpu": "500m", "memory": "64Mi"}),
			}),
			opts: on,
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(512), Quota: i64(150000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(192 * mi)},
			},
		},
		{
			name: "burstable: one container without cpu limit drops the quota",
			pod: testPod("b", nil, []corev1.Container{
				ctr("a", res{"cpu": "250m"}, res{"cpu": "1", "memory": "128Mi"}),
				ctr("b", res{"cpu": "100m"}, res{"memory": "64Mi"}),
			}),
			opts: on,
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(358)},
				Memory: &specs.LinuxMemory{Limit: i64(192 * mi)},
			},
		},
		{
			name: "burstable: memory request only, no limits",
			pod:  testPod("b", nil, []corev1.Container{ctr("a", res{"memory": "64Mi"}, nil)}),
			opts: on,
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(2)}},
		},
		{
			name: "besteffort: minimum shares only",
			pod:  testPod("e", nil, []corev1.Container{ctr("a", nil, nil)}),
			opts: on,
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(2)}},
		},
		{
			name: "pids limit",
			pod:  testPod("e", nil, []corev1.Container{ctr("a", nil, nil)}),
			opts: PodOptions{EnforceCPULimits: true, PidsLimit: 1024},
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(2)}, Pids: &specs.LinuxPids{Limit: i64(1024)}},
		},
		{
			name: "init container larger than the app containers sets the request",
			pod: testPod("i",
				[]corev1.Container{ctr("init", res{"cpu": "2", "memory": "256Mi"}, res{"cpu": "2", "memory": "256Mi"})},
				[]corev1.Container{ctr("a", res{"cpu": "500m", "memory": "64Mi"}, res{"cpu": "500m", "memory": "64Mi"})}),
			opts: on,
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(2048), Quota: i64(200000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(256 * mi)},
			},
		},
		{
			name: "sidecar adds to app containers and to later init containers",
			pod: testPod("s",
				[]corev1.Container{sidecar, ctr("init", res{"cpu": "1"}, res{"cpu": "1", "memory": "16Mi"})},
				[]corev1.Container{ctr("a", res{"cpu": "200m"}, res{"cpu": "300m", "memory": "64Mi"})}),
			opts: on,
			// requests: max(app 200m + side 100m, init 1 + side 100m) = 1100m
			// limits:   max(app 300m + side 200m, init 1 + side 200m) = 1200m; memory max(96Mi, 48Mi)
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(1126), Quota: i64(120000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(96 * mi)},
			},
		},
		{
			name: "overhead is added to requests and to set limits",
			pod: func() *corev1.Pod {
				p := testPod("o", nil, []corev1.Container{ctr("a", res{"cpu": "500m", "memory": "64Mi"}, res{"cpu": "500m", "memory": "64Mi"})})
				p.Spec.Overhead = list(res{"cpu": "100m", "memory": "16Mi"})
				return p
			}(),
			opts: on,
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(614), Quota: i64(60000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(80 * mi)},
			},
		},
		{
			name: "pod-level resources replace the containers' sums and declare limits",
			pod: func() *corev1.Pod {
				p := testPod("l", nil, []corev1.Container{ctr("a", nil, nil), ctr("b", nil, nil)})
				p.Spec.Resources = &corev1.ResourceRequirements{
					Requests: list(res{"cpu": "1", "memory": "100Mi"}),
					Limits:   list(res{"cpu": "2", "memory": "200Mi"}),
				}
				return p
			}(),
			opts: on,
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(1024), Quota: i64(200000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(200 * mi)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodResources(tc.pod, tc.opts)
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestContainerResources(t *testing.T) {
	tests := []struct {
		name string
		c    corev1.Container
		opts ContainerOptions
		want specs.LinuxResources
	}{
		{
			name: "request and limits on v1 with swap accounting",
			c:    ctr("a", res{"cpu": "250m"}, res{"cpu": "500m", "memory": "64Mi"}),
			opts: ContainerOptions{EnforceCPULimits: true, SwapController: true},
			want: specs.LinuxResources{
				CPU:    &specs.LinuxCPU{Shares: u64(256), Quota: i64(50000), Period: u64(100000)},
				Memory: &specs.LinuxMemory{Limit: i64(64 * mi), Swap: i64(64 * mi)},
			},
		},
		{
			name: "limit only: shares from the limit",
			c:    ctr("a", nil, res{"cpu": "2"}),
			opts: ContainerOptions{EnforceCPULimits: true},
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(2048), Quota: i64(200000), Period: u64(100000)}},
		},
		{
			name: "no cpu limit: period without quota",
			c:    ctr("a", res{"cpu": "100m"}, nil),
			opts: ContainerOptions{EnforceCPULimits: true},
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(102), Period: u64(100000)}},
		},
		{
			name: "CFS quota off",
			c:    ctr("a", nil, res{"cpu": "1"}),
			opts: ContainerOptions{},
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(1024)}},
		},
		{
			name: "v2: no swap and OOM group via unified keys",
			c:    ctr("a", nil, res{"memory": "64Mi"}),
			opts: ContainerOptions{EnforceCPULimits: true, CgroupV2: true, SwapController: true},
			want: specs.LinuxResources{
				CPU:     &specs.LinuxCPU{Shares: u64(2), Period: u64(100000)},
				Memory:  &specs.LinuxMemory{Limit: i64(64 * mi)},
				Unified: map[string]string{"memory.swap.max": "0", "memory.oom.group": "1"},
			},
		},
		{
			name: "v2 single-process OOM kill without swap accounting",
			c:    ctr("a", nil, nil),
			opts: ContainerOptions{CgroupV2: true, SingleProcessOOMKill: true},
			want: specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(2)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, *ContainerResources(&tc.c, tc.opts))
		})
	}
}
