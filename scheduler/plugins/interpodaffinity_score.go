package plugins

import (
	"context"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podkit/podkit/scheduler"
)

func labelsOf(pod *corev1.Pod) labels.Set { return labels.Set(pod.Labels) }

const affinityScoreStateKey = "PreScore" + InterPodAffinityName

// topologyScore sums weights per topology key and value.
type topologyScore map[string]map[string]int64

func (m topologyScore) add(node *corev1.Node, key string, v int64) {
	value, ok := node.Labels[key]
	if !ok {
		return
	}
	if m[key] == nil {
		m[key] = map[string]int64{}
	}
	m[key][value] += v
}

func (m topologyScore) addValue(key, value string, v int64) {
	if m[key] == nil {
		m[key] = map[string]int64{}
	}
	m[key][value] += v
}

// PreScore sums, per domain, the weights of matching preferred terms of
// the incoming pod against existing pods and of existing pods (preferred,
// and required with the hard weight) against the incoming pod.
func (pl *InterPodAffinity) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, nodes []*scheduler.NodeInfo) error {
	if len(nodes) == 0 {
		return scheduler.ErrSkip
	}
	pi := scheduler.NewPodInfo(pod)
	hasOwn := len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
	if pl.ignoreExisting && !hasOwn {
		return scheduler.ErrSkip
	}
	snap := s.Snapshot()
	score := topologyScore{}
	// The incoming pod's preferred terms, once per group of identical pods.
	if hasOwn {
		for _, g := range snap.PodGroups() {
			own := func(terms []scheduler.WeightedAffinityTerm, sign int64) {
				for i := range terms {
					t := &terms[i]
					if !termMatches(&t.AffinityTerm, g.Pod().Pod, snap) {
						continue
					}
					for v, n := range g.DomainCounts(t.TopologyKey) {
						score.addValue(t.TopologyKey, v, sign*int64(t.Weight)*int64(n))
					}
				}
			}
			own(pi.PreferredAffinityTerms, 1)
			own(pi.PreferredAntiAffinityTerms, -1)
		}
	}
	// Existing pods' terms against the incoming pod. Pods whose only terms
	// are required anti-affinity (a common workload shape) weigh nothing
	// here: when no pod has another kind, the walk over every pod with
	// affinity (10,000 of them, a cache miss each, per cycle) is skipped.
	existing := snap.HavePodsWithAffinityList()
	if snap.NumPodsWithScoringAffinity() == 0 {
		existing = nil
	}
	for _, ni := range existing {
		node := ni.Node()
		if len(node.Labels) == 0 {
			continue
		}
		for _, ex := range ni.PodsWithAffinity {
			pl.processExisting(score, pi, ex, node, snap)
		}
	}
	if len(score) == 0 {
		return scheduler.ErrSkip
	}
	s.Write(affinityScoreStateKey, score)
	return nil
}

// processExisting adds an existing pod's terms that select the incoming pod.
func (pl *InterPodAffinity) processExisting(score topologyScore, in, ex *scheduler.PodInfo, node *corev1.Node, snap *scheduler.Snapshot) {
	weighted := func(terms []scheduler.WeightedAffinityTerm, sign int64) {
		for i := range terms {
			if termMatches(&terms[i].AffinityTerm, in.Pod, snap) {
				score.add(node, terms[i].TopologyKey, sign*int64(terms[i].Weight))
			}
		}
	}
	if pl.hardWeight > 0 {
		for i := range ex.RequiredAffinityTerms {
			if termMatches(&ex.RequiredAffinityTerms[i], in.Pod, snap) {
				score.add(node, ex.RequiredAffinityTerms[i].TopologyKey, int64(pl.hardWeight))
			}
		}
	}
	weighted(ex.PreferredAffinityTerms, 1)
	weighted(ex.PreferredAntiAffinityTerms, -1)
}

// Score sums the weights of the node's domains.
func (*InterPodAffinity) Score(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	score, err := scheduler.ReadAs[topologyScore](s, affinityScoreStateKey)
	if err != nil {
		return 0, err
	}
	var total int64
	for key, values := range score {
		if v, ok := n.Node().Labels[key]; ok {
			total += values[v]
		}
	}
	return total, nil
}

// NormalizeScore maps the sums linearly from [min, max] onto [0, 100].
func (*InterPodAffinity) NormalizeScore(_ context.Context, _ *scheduler.CycleState, _ *corev1.Pod, scores []scheduler.NodeScore) error {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, sc := range scores {
		lo, hi = min(lo, sc.Score), max(hi, sc.Score)
	}
	diff := hi - lo
	for i := range scores {
		var f float64
		if diff > 0 {
			f = float64(scheduler.MaxNodeScore) * float64(scores[i].Score-lo) / float64(diff)
		}
		scores[i].Score = int64(f)
	}
	return nil
}
