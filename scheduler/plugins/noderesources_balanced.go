package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// BalancedAllocationName is the plugin's name.
const BalancedAllocationName = "NodeResourcesBalancedAllocation"

// BalancedAllocationArgs configure NodeResourcesBalancedAllocation.
type BalancedAllocationArgs struct {
	// Resources balanced, default cpu and memory.
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// BalancedAllocation prefers nodes whose resources would be used in equal
// shares after placing the pod (it avoids nodes with CPU full and memory
// idle). Best-effort pods are not scored by it.
type BalancedAllocation struct{ scorer resourceScorer }

var (
	_ scheduler.PreScore = (*BalancedAllocation)(nil)
	_ scheduler.Scorer   = (*BalancedAllocation)(nil)
)

// NewBalancedAllocation returns the plugin.
func NewBalancedAllocation(args BalancedAllocationArgs) (*BalancedAllocation, error) {
	rs, err := validateResources(BalancedAllocationName, args.Resources)
	if err != nil {
		return nil, err
	}
	return &BalancedAllocation{scorer: resourceScorer{resources: rs, useRequested: true, kind: scoreBalanced}}, nil
}

// Name returns BalancedAllocationName.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

const balancedStateKey = "PreScore" + BalancedAllocationName

// PreScore computes the pod's requests; a pod requesting none of the
// resources skips the score.
func (b *BalancedAllocation) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, _ []*scheduler.NodeInfo) error {
	req := b.scorer.podRequests(pod)
	zero := true
	for _, v := range req {
		zero = zero && v == 0
	}
	if zero {
		return scheduler.ErrSkip
	}
	s.Write(balancedStateKey, req)
	return nil
}

// Score rates how balanced the node would be.
func (b *BalancedAllocation) Score(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	req, err := scheduler.ReadAs[[]int64](s, balancedStateKey)
	if err != nil {
		return 0, err
	}
	return b.scorer.score(req, n), nil
}
