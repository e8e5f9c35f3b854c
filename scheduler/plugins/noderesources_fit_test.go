package plugins

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

func TestFitFilter(t *testing.T) {
	n := node("n").alloc("cpu", "4", "memory", "8Gi", "pods", "3", "ephemeral-storage", "10Gi", "example.com/gpu", "2", "hugepages-2Mi", "1Gi").obj()
	used := []*corev1.Pod{
		pod("e1").node("n").req("cpu", "2", "memory", "2Gi").obj(),
		pod("e2").node("n").req("example.com/gpu", "1").obj(),
	}
	tests := []struct {
		name         string
		pod          *corev1.Pod
		existing     []*corev1.Pod
		args         FitArgs
		want         string
		unresolvable bool
	}{
		{"fits", pod("p").req("cpu", "1", "memory", "1Gi").obj(), used, FitArgs{}, "", false},
		{"zero requests fit even a full node", pod("p").obj(), []*corev1.Pod{pod("e").node("n").req("cpu", "4", "memory", "8Gi").obj()}, FitArgs{}, "", false},
		{"exactly the free cpu", pod("p").req("cpu", "2").obj(), used, FitArgs{}, "", false},
		{"insufficient cpu", pod("p").req("cpu", "2500m").obj(), used, FitArgs{}, "Insufficient cpu", false},
		{"insufficient cpu and memory, both reported", pod("p").req("cpu", "3", "memory", "7Gi").obj(), used, FitArgs{}, "Insufficient cpu; Insufficient memory", false},
		{"more than allocatable is unresolvable", pod("p").req("cpu", "5").obj(), nil, FitArgs{}, "Insufficient cpu", true},
		{"too many pods", pod("p").obj(), append(used, pod("e3").node("n").obj()), FitArgs{}, "Too many pods", false},
		{"too many pods and insufficient cpu", pod("p").req("cpu", "3").obj(), append(used, pod("e3").node("n").obj()), FitArgs{}, "Too many pods; Insufficient cpu", false},
		{"ephemeral storage", pod("p").req("ephemeral-storage", "11Gi").obj(), nil, FitArgs{}, "Insufficient ephemeral-storage", true},
		{"extended resource fits", pod("p").req("example.com/gpu", "1").obj(), used, FitArgs{}, "", false},
		{"extended resource insufficient", pod("p").req("example.com/gpu", "2").obj(), used, FitArgs{}, "Insufficient example.com/gpu", false},
		{"extended resource the node lacks", pod("p").req("example.com/fpga", "1").obj(), nil, FitArgs{}, "Insufficient example.com/fpga", true},
		{"ignored extended resource", pod("p").req("example.com/fpga", "1").obj(), nil, FitArgs{IgnoredResources: []string{"example.com/fpga"}}, "", false},
		{"ignored resource group", pod("p").req("example.com/fpga", "1").obj(), nil, FitArgs{IgnoredResourceGroups: []string{"example.com"}}, "", false},
		{"hugepages", pod("p").req("hugepages-2Mi", "2Gi").obj(), nil, FitArgs{}, "Insufficient hugepages-2Mi", true},
		{"init container larger than app containers", pod("p").req("cpu", "1").init("cpu", "3").obj(), used, FitArgs{}, "Insufficient cpu", false},
		{"init container smaller than the sum of app containers", pod("p").req("cpu", "1").container("cpu", "1").init("cpu", "1500m").obj(), used, FitArgs{}, "", false},
		{"sidecar adds to app containers", pod("p").req("cpu", "1").sidecar("cpu", "1500m").obj(), used, FitArgs{}, "Insufficient cpu", false},
		{"init container runs beside earlier sidecars", pod("p").sidecar("cpu", "1").init("cpu", "1500m").obj(), used, FitArgs{}, "Insufficient cpu", false},
		{"pod overhead counts", pod("p").req("cpu", "1500m").overhead("cpu", "600m").obj(), used, FitArgs{}, "Insufficient cpu", false},
		{"pod overhead that fits", pod("p").req("cpu", "1500m").overhead("cpu", "500m").obj(), used, FitArgs{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewFit(tt.args)
			require.NoError(t, err)
			err = runFilter(pl, tt.pod, "n", []*corev1.Node{n}, tt.existing)
			assert.Equal(t, tt.want, reasonsOf(err))
			if tt.want != "" {
				assert.ErrorIs(t, err, scheduler.ErrUnschedulable)
				assert.Equal(t, tt.unresolvable, errors.Is(err, scheduler.ErrUnresolvable))
			}
		})
	}
}

func TestFitPodLevelResources(t *testing.T) {
	p := pod("p").req("cpu", "100m").obj()
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "3")}
	err := runFilter(mustFit(t, FitArgs{}), p, "n", []*corev1.Node{node("n").alloc("cpu", "2", "pods", "10").obj()}, nil)
	assert.Equal(t, "Insufficient cpu", reasonsOf(err))
}

func mustFit(t *testing.T, args FitArgs) *Fit {
	t.Helper()
	pl, err := NewFit(args)
	require.NoError(t, err)
	return pl
}

func TestFitArgsValidation(t *testing.T) {
	_, err := NewFit(FitArgs{ScoringStrategy: &ScoringStrategy{Type: "RequestedToCapacityRatio"}})
	assert.ErrorIs(t, err, scheduler.ErrProfile)
	_, err = NewFit(FitArgs{ScoringStrategy: &ScoringStrategy{Type: MostAllocated, Resources: []ResourceSpec{{Name: "cpu", Weight: 0}}}})
	assert.ErrorIs(t, err, scheduler.ErrProfile)
	_, err = NewFit(FitArgs{IgnoredResourceGroups: []string{"example.com/x"}})
	assert.ErrorIs(t, err, scheduler.ErrProfile)
}

func TestFitScoreStrategies(t *testing.T) {
	// Two nodes of 4 cpu / 8Gi; "busy" already has 2 cpu / 2Gi requested.
	nodes := []*corev1.Node{
		node("idle").alloc("cpu", "4", "memory", "8Gi", "pods", "110").obj(),
		node("busy").alloc("cpu", "4", "memory", "8Gi", "pods", "110").obj(),
	}
	existing := []*corev1.Pod{pod("e").node("busy").req("cpu", "2", "memory", "2Gi").obj()}
	p := pod("p").req("cpu", "1", "memory", "2Gi").obj()
	tests := []struct {
		name string
		st   *ScoringStrategy
		want map[string]int64
	}{
		// idle: cpu (4-1)/4=75, mem (8-2)/8=75 → 75; busy: cpu 25, mem 50 → 37
		{"LeastAllocated default", nil, map[string]int64{"idle": 75, "busy": 37}},
		// idle: cpu 25, mem 25 → 25; busy: cpu 75, mem 50 → 62
		{"MostAllocated", &ScoringStrategy{Type: MostAllocated}, map[string]int64{"idle": 25, "busy": 62}},
		// weights cpu 3, mem 1: busy (25*3+50)/4 = 31
		{"LeastAllocated weighted", &ScoringStrategy{Type: LeastAllocated, Resources: []ResourceSpec{{Name: "cpu", Weight: 3}, {Name: "memory", Weight: 1}}}, map[string]int64{"idle": 75, "busy": 31}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runScore(mustFit(t, FitArgs{ScoringStrategy: tt.st}), p, nodes, existing)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFitScoreBestEffortCountsDefaults(t *testing.T) {
	// A best-effort pod counts 100m cpu and 200MiB for spreading.
	nodes := []*corev1.Node{node("n").alloc("cpu", "1", "memory", "2000Mi", "pods", "110").obj()}
	got, err := runScore(mustFit(t, FitArgs{}), pod("p").obj(), nodes, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"n": 90}, got) // cpu 90, memory 90
}

func TestFitScoreExtendedResourceNotRequested(t *testing.T) {
	st := &ScoringStrategy{Type: MostAllocated, Resources: []ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "example.com/gpu", Weight: 5}}}
	nodes := []*corev1.Node{node("n").alloc("cpu", "4", "example.com/gpu", "4", "pods", "110").obj()}
	got, err := runScore(mustFit(t, FitArgs{ScoringStrategy: st}), pod("p").req("cpu", "2").obj(), nodes, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"n": 50}, got, "the gpu the pod does not request is left out")
	got, err = runScore(mustFit(t, FitArgs{ScoringStrategy: st}), pod("p").req("cpu", "2", "example.com/gpu", "4").obj(), nodes, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"n": (50 + 5*100) / 6}, got)
}

func TestBalancedAllocation(t *testing.T) {
	nodes := []*corev1.Node{
		node("even").alloc("cpu", "4", "memory", "4Gi", "pods", "110").obj(),
		node("skewed").alloc("cpu", "4", "memory", "16Gi", "pods", "110").obj(),
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		// even: cpu 1/4, mem 1/4 → std 0 → 100; skewed: cpu 1/4, mem 1/16 → std 0.09375 → 90
		{"balanced shares win", pod("p").req("cpu", "1", "memory", "1Gi").obj(), map[string]int64{"even": 100, "skewed": 90}},
		{"best-effort pods are not scored", pod("p").obj(), nil},
		{"fractions cap at 1", pod("p").req("cpu", "8", "memory", "1Gi").obj(), map[string]int64{"even": 62, "skewed": 53}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewBalancedAllocation(BalancedAllocationArgs{})
			require.NoError(t, err)
			got, err := runScore(pl, tt.pod, nodes, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBalancedScoreThreeResources(t *testing.T) {
	// fractions 0.5, 0.5, 0.2: mean 0.4, variance (0.01+0.01+0.04)/3 = 0.02, std 0.1414 → 85
	assert.Equal(t, int64(85), balancedScore([]int64{2, 4, 1}, []int64{4, 8, 5}, nil))
	assert.Equal(t, int64(100), balancedScore([]int64{1}, []int64{4}, nil))
	assert.Equal(t, int64(100), balancedScore([]int64{1, 0}, []int64{4, 0}, nil), "resources without allocatable are skipped")
}
