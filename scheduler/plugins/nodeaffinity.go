package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// NodeAffinityName is the plugin's name.
const NodeAffinityName = "NodeAffinity"

// NodeAffinity's rejections.
const (
	ErrReasonNodeAffinity     = "node(s) didn't match Pod's node affinity/selector"
	ErrReasonEnforcedAffinity = "node(s) didn't match scheduler-enforced node affinity"
)

// NodeAffinityArgs configure NodeAffinity.
type NodeAffinityArgs struct {
	// AddedAffinity applies to every pod of the profile, on top of its own.
	AddedAffinity *corev1.NodeAffinity `json:"addedAffinity,omitempty"`
}

// NodeAffinity filters nodes by the pod's nodeSelector and required node
// affinity (terms ORed, expressions ANDed; operators In, NotIn, Exists,
// DoesNotExist, Gt, Lt; matchFields on metadata.name), and scores nodes by
// the summed weights of the preferred terms they match.
type NodeAffinity struct {
	added *corev1.NodeAffinity
}

var (
	_ scheduler.Filter            = (*NodeAffinity)(nil)
	_ scheduler.PreScore          = (*NodeAffinity)(nil)
	_ scheduler.Scorer            = (*NodeAffinity)(nil)
	_ scheduler.ScoreNormalizer   = (*NodeAffinity)(nil)
	_ scheduler.EnqueueExtensions = (*NodeAffinity)(nil)
)

// NewNodeAffinity returns the plugin.
func NewNodeAffinity(args NodeAffinityArgs) (*NodeAffinity, error) {
	return &NodeAffinity{added: args.AddedAffinity}, nil
}

// Name returns NodeAffinityName.
func (*NodeAffinity) Name() string { return NodeAffinityName }

// EventsToRegister: labels change only with nodes.
func (*NodeAffinity) EventsToRegister() scheduler.ClusterEvent {
	return scheduler.NodeAdd | scheduler.NodeUpdate
}

// Filter rejects a node that does not satisfy the required affinity.
func (pl *NodeAffinity) Filter(_ context.Context, _ *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) error {
	node := n.Node()
	if node == nil {
		return errUnknownNode
	}
	if pl.added != nil && pl.added.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
		!matchNodeSelector(pl.added.RequiredDuringSchedulingIgnoredDuringExecution, node) {
		return errEnforcedAffinity
	}
	if !requiredNodeAffinityMatches(pod, node) {
		return errNodeAffinity
	}
	return nil
}

const nodeAffinityStateKey = "PreScore" + NodeAffinityName

type preferredTerms []corev1.PreferredSchedulingTerm

// PreScore collects the preferred terms (the profile's added ones too),
// skipping Score when there are none.
func (pl *NodeAffinity) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, _ []*scheduler.NodeInfo) error {
	var terms preferredTerms
	if pl.added != nil {
		terms = append(terms, pl.added.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		terms = append(terms, a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if len(terms) == 0 {
		return scheduler.ErrSkip
	}
	s.Write(nodeAffinityStateKey, terms)
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (pl *NodeAffinity) Score(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	terms, err := scheduler.ReadAs[preferredTerms](s, nodeAffinityStateKey)
	if err != nil {
		return 0, err
	}
	var score int64
	for i := range terms {
		if terms[i].Weight != 0 && matchTerm(&terms[i].Preference, n.Node(), true) {
			score += int64(terms[i].Weight)
		}
	}
	return score, nil
}

// NormalizeScore scales the sums onto 0..100.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *scheduler.CycleState, _ *corev1.Pod, scores []scheduler.NodeScore) error {
	scheduler.DefaultNormalizeScore(scheduler.MaxNodeScore, false, scores)
	return nil
}
