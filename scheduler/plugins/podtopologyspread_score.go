package plugins

import (
	"context"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

const spreadScoreStateKey = "PreScore" + PodTopologySpreadName

// spreadScoreState holds, per ScheduleAnyway constraint, the matching pods
// per domain of the feasible nodes and the constraint's weight.
type spreadScoreState struct {
	constraints []spreadConstraint
	ignored     map[string]bool
	counts      []map[string]*int64
	weights     []float64
}

// PreScore counts matching pods in the domains of the feasible nodes.
// Feasible nodes missing a topology key are ignored (score 0).
func (pl *PodTopologySpread) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, nodes []*scheduler.NodeInfo) error {
	cs, err := constraints(pod, corev1.ScheduleAnyway)
	if err != nil {
		return err
	}
	if len(cs) == 0 || len(nodes) == 0 {
		return scheduler.ErrSkip
	}
	st := &spreadScoreState{constraints: cs, ignored: map[string]bool{}, counts: make([]map[string]*int64, len(cs)), weights: make([]float64, len(cs))}
	sizes := make([]int, len(cs))
	for i := range cs {
		st.counts[i] = map[string]*int64{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if !hasAllKeys(node, cs) {
			st.ignored[node.Name] = true
			continue
		}
		for i := range cs {
			if cs[i].hostnameScoped {
				continue // counted per node in Score
			}
			v := node.Labels[cs[i].topologyKey]
			if st.counts[i][v] == nil {
				st.counts[i][v] = new(int64)
				sizes[i]++
			}
		}
	}
	for i := range cs {
		if cs[i].hostnameScoped {
			sizes[i] = len(nodes) - len(st.ignored)
		}
		// More domains weigh more, so key types balance each other.
		st.weights[i] = math.Log(float64(sizes[i] + 2))
	}
	if !pl.slowPath && fastPath(pod, cs) {
		if !cs[0].hostnameScoped {
			groups := matchingGroups(s.Snapshot(), pod, &cs[0])
			for v, c := range st.counts[0] {
				for _, g := range groups {
					*c += int64(g[v])
				}
			}
		}
		s.Write(spreadScoreStateKey, st)
		return nil
	}
	memos := make([]memo, len(cs))
	for i := range memos {
		memos[i] = memo{}
	}
	vals := make([]string, len(cs))
	for _, ni := range s.Snapshot().List() {
		if len(ni.Pods) == 0 {
			continue
		}
		node := ni.Node()
		if !topologyValues(node, cs, vals) {
			continue
		}
		for i := range cs {
			if cs[i].hostnameScoped || !cs[i].includes(pod, node) {
				continue
			}
			if c := st.counts[i][vals[i]]; c != nil {
				*c += int64(countMatching(ni.Pods, cs[i].selector, pod.Namespace, memos[i]))
			}
		}
	}
	s.Write(spreadScoreStateKey, st)
	return nil
}

// Score is the weighted count of matching pods in the node's domains
// (lower is better after normalisation).
func (*PodTopologySpread) Score(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	st, err := scheduler.ReadAs[*spreadScoreState](s, spreadScoreStateKey)
	if err != nil {
		return 0, err
	}
	node := n.Node()
	if st.ignored[node.Name] {
		return 0, nil
	}
	var score float64
	for i := range st.constraints {
		c := &st.constraints[i]
		v, ok := node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var cnt int64
		if c.hostnameScoped {
			cnt = int64(countMatching(n.Pods, c.selector, pod.Namespace, nil))
		} else {
			cnt = *st.counts[i][v]
		}
		score += float64(cnt)*st.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore inverts the scores onto 0..100; ignored nodes get 0.
func (*PodTopologySpread) NormalizeScore(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, scores []scheduler.NodeScore) error {
	st, err := scheduler.ReadAs[*spreadScoreState](s, spreadScoreStateKey)
	if err != nil {
		return err
	}
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for _, sc := range scores {
		if st.ignored[sc.Name] {
			continue
		}
		minScore = min(minScore, sc.Score)
		maxScore = max(maxScore, sc.Score)
	}
	for i := range scores {
		switch {
		case st.ignored[scores[i].Name]:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = scheduler.MaxNodeScore
		default:
			scores[i].Score = scheduler.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}
