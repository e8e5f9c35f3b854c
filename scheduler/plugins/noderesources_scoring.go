package plugins

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// ScoringStrategyType names how NodeResourcesFit scores nodes.
type ScoringStrategyType string

// Scoring strategies.
const (
	// LeastAllocated prefers nodes with the most free capacity (spreads).
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated prefers the fullest nodes (bin packing).
	MostAllocated ScoringStrategyType = "MostAllocated"
)

// ResourceSpec is a resource and its weight in a score.
type ResourceSpec struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
}

// ScoringStrategy is NodeResourcesFit's score configuration.
type ScoringStrategy struct {
	Type ScoringStrategyType `json:"type"`
	// Resources scored, default cpu and memory with weight 1.
	Resources []ResourceSpec `json:"resources,omitempty"`
}

var defaultResources = []ResourceSpec{{Name: string(corev1.ResourceCPU), Weight: 1}, {Name: string(corev1.ResourceMemory), Weight: 1}}

// resourceScorer scores a node from requested and allocatable amounts of
// a list of resources.
type resourceScorer struct {
	resources []ResourceSpec
	// useRequested counts real requests; otherwise containers without cpu
	// or memory requests count the scheduler's defaults.
	useRequested bool
	kind         scoreKind
}

type scoreKind uint8

const (
	scoreLeast scoreKind = iota
	scoreMost
	scoreBalanced
)

func validateResources(plugin string, rs []ResourceSpec) ([]ResourceSpec, error) {
	if len(rs) == 0 {
		return defaultResources, nil
	}
	for _, r := range rs {
		if r.Weight <= 0 || r.Weight > 100 {
			return nil, fmt.Errorf("%s: resource %q weight %d not in [1, 100]: %w", plugin, r.Name, r.Weight, scheduler.ErrProfile)
		}
	}
	return rs, nil
}

func newResourceScorer(plugin string, st ScoringStrategy) (resourceScorer, error) {
	rs, err := validateResources(plugin, st.Resources)
	if err != nil {
		return resourceScorer{}, err
	}
	switch st.Type {
	case LeastAllocated, "":
		return resourceScorer{resources: rs, kind: scoreLeast}, nil
	case MostAllocated:
		return resourceScorer{resources: rs, kind: scoreMost}, nil
	}
	return resourceScorer{}, fmt.Errorf("%s: scoring strategy %q not supported (LeastAllocated, MostAllocated): %w", plugin, st.Type, scheduler.ErrProfile)
}

// podRequests returns the pod's request of each scored resource.
func (r resourceScorer) podRequests(pod *corev1.Pod) []int64 {
	req := scheduler.PodRequests(pod, !r.useRequested)
	out := make([]int64, len(r.resources))
	for i, res := range r.resources {
		out[i] = req.Get(corev1.ResourceName(res.Name))
	}
	return out
}

// score computes the node's score for a pod requesting podReq.
func (r resourceScorer) score(podReq []int64, n *scheduler.NodeInfo) int64 {
	var requestedArr, allocArr [8]int64
	requested, alloc := requestedArr[:0], allocArr[:0]
	used := &n.NonZeroRequested
	if r.useRequested {
		used = &n.Requested
	}
	for i, res := range r.resources {
		name := corev1.ResourceName(res.Name)
		a := n.Allocatable.Get(name)
		if podReq[i] == 0 && scheduler.IsScalarResourceName(name) {
			a = 0 // an extended resource the pod does not use is not scored
		}
		var u int64
		if a != 0 {
			u = used.Get(name) + podReq[i]
		}
		requested = append(requested, u)
		alloc = append(alloc, a)
	}
	switch r.kind {
	case scoreMost:
		return mostAllocatedScore(requested, alloc, r.resources)
	case scoreBalanced:
		return balancedScore(requested, alloc, r.resources)
	}
	return leastAllocatedScore(requested, alloc, r.resources)
}

// leastAllocatedScore: free share of each resource, weighted.
func leastAllocatedScore(requested, alloc []int64, resources []ResourceSpec) int64 {
	var score, weights int64
	for i := range requested {
		capacity, req := alloc[i], requested[i]
		if capacity == 0 {
			continue
		}
		if req <= capacity {
			score += (capacity - req) * scheduler.MaxNodeScore / capacity * resources[i].Weight
		}
		weights += resources[i].Weight
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// mostAllocatedScore: used share of each resource, weighted.
func mostAllocatedScore(requested, alloc []int64, resources []ResourceSpec) int64 {
	var score, weights int64
	for i := range requested {
		capacity := alloc[i]
		if capacity == 0 {
			continue
		}
		score += min(requested[i], capacity) * scheduler.MaxNodeScore / capacity * resources[i].Weight
		weights += resources[i].Weight
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// balancedScore: 100 × (1 − standard deviation of the used shares).
func balancedScore(requested, alloc []int64, _ []ResourceSpec) int64 {
	var fractions [8]float64
	fs := fractions[:0]
	var total float64
	for i := range requested {
		if alloc[i] == 0 {
			continue
		}
		f := math.Min(float64(requested[i])/float64(alloc[i]), 1)
		total += f
		fs = append(fs, f)
	}
	var std float64
	switch {
	case len(fs) == 2:
		std = math.Abs((fs[0] - fs[1]) / 2)
	case len(fs) > 2:
		mean := total / float64(len(fs))
		var sum float64
		for _, f := range fs {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fs)))
	}
	return int64((1 - std) * float64(scheduler.MaxNodeScore))
}
