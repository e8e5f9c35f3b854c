package plugins

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podkit/podkit/scheduler"
)

// referenceAffinity is a direct, per-pod reading of the required
// (anti-)affinity rules, to check the group-based implementation.
func referenceAffinity(in *corev1.Pod, n *corev1.Node, nodes []*corev1.Node, pods []*corev1.Pod) string {
	byName := map[string]*corev1.Node{}
	for _, x := range nodes {
		byName[x.Name] = x
	}
	pi := scheduler.NewPodInfo(in)
	matches := func(t *scheduler.AffinityTerm, p *corev1.Pod) bool { return t.Matches(p, labels.Set{}) }
	allMatch := func(p *corev1.Pod) bool {
		for i := range pi.RequiredAffinityTerms {
			if !matches(&pi.RequiredAffinityTerms[i], p) {
				return false
			}
		}
		return len(pi.RequiredAffinityTerms) > 0
	}
	// 1. affinity
	if terms := pi.RequiredAffinityTerms; len(terms) > 0 {
		exist, any := true, false
		for i := range terms {
			v, ok := n.Labels[terms[i].TopologyKey]
			if !ok {
				return ErrReasonAffinityRulesNotMatch
			}
			found := false
			for _, p := range pods {
				m := byName[p.Spec.NodeName]
				if m == nil || !allMatch(p) {
					continue
				}
				if mv, ok := m.Labels[terms[i].TopologyKey]; ok {
					any = true
					found = found || mv == v
				}
			}
			exist = exist && found
		}
		if !exist {
			for _, p := range pods {
				m := byName[p.Spec.NodeName]
				if m == nil || !allMatch(p) {
					continue
				}
				for i := range terms {
					if _, ok := m.Labels[terms[i].TopologyKey]; ok {
						any = true
					}
				}
			}
			if any || !allMatch(in) {
				return ErrReasonAffinityRulesNotMatch
			}
		}
	}
	// 2. anti-affinity of the incoming pod
	for i := range pi.RequiredAntiAffinityTerms {
		t := &pi.RequiredAntiAffinityTerms[i]
		v, ok := n.Labels[t.TopologyKey]
		if !ok {
			continue
		}
		for _, p := range pods {
			if m := byName[p.Spec.NodeName]; m != nil && m.Labels[t.TopologyKey] == v && matches(t, p) {
				if _, has := m.Labels[t.TopologyKey]; has {
					return ErrReasonAntiAffinityRulesNotMatch
				}
			}
		}
	}
	// 3. existing pods' anti-affinity
	for _, p := range pods {
		m := byName[p.Spec.NodeName]
		if m == nil {
			continue
		}
		ex := scheduler.NewPodInfo(p)
		for i := range ex.RequiredAntiAffinityTerms {
			t := &ex.RequiredAntiAffinityTerms[i]
			mv, ok := m.Labels[t.TopologyKey]
			if ok && n.Labels[t.TopologyKey] == mv && matches(t, in) {
				if _, has := n.Labels[t.TopologyKey]; has {
					return ErrReasonExistingAntiAffinityRulesNotMatch
				}
			}
		}
	}
	return ""
}

func TestInterPodAffinityMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	apps, keys := []string{"a", "b", "c"}, []string{zoneKey, corev1.LabelHostname, "rack"}
	randomTerm := func() corev1.PodAffinityTerm {
		return podTerm(keys[rng.IntN(len(keys))], "app", apps[rng.IntN(len(apps))])
	}
	for round := range 300 {
		var nodes []*corev1.Node
		for i := range 2 + rng.IntN(6) {
			b := node(fmt.Sprintf("n%d", i))
			if rng.IntN(4) > 0 {
				b.labels(zoneKey, fmt.Sprintf("z%d", rng.IntN(3)))
			}
			if rng.IntN(3) == 0 {
				b.labels("rack", fmt.Sprintf("r%d", rng.IntN(2)))
			}
			nodes = append(nodes, b.obj())
		}
		var pods []*corev1.Pod
		for i := range rng.IntN(12) {
			b := pod(fmt.Sprintf("e%d", i)).node(nodes[rng.IntN(len(nodes))].Name).labels("app", apps[rng.IntN(3)])
			switch rng.IntN(6) {
			case 0:
				b.podAntiAffinity(randomTerm())
			case 1:
				b.podAffinity(randomTerm())
			case 2:
				b.ns("other")
			}
			pods = append(pods, b.obj())
		}
		b := pod("in").labels("app", apps[rng.IntN(3)])
		for range rng.IntN(3) {
			b.podAffinity(randomTerm())
		}
		for range rng.IntN(3) {
			b.podAntiAffinity(randomTerm())
		}
		in := b.obj()
		for _, n := range nodes {
			want := referenceAffinity(in, n, nodes, pods)
			got := reasonsOf(runFilter(mustAffinity(t, InterPodAffinityArgs{}), in, n.Name, nodes, pods))
			require.Equal(t, want, got, "round %d node %s", round, n.Name)
			// A NodeInfo the snapshot does not hold (a copy) takes the
			// label path instead of the per-node group counts.
			got = reasonsOf(runFilterOnCopy(mustAffinity(t, InterPodAffinityArgs{}), in, n.Name, nodes, pods))
			require.Equal(t, want, got, "round %d node %s (copy)", round, n.Name)
		}
	}
}

// runFilterOnCopy is runFilter with a copy of the node's NodeInfo.
func runFilterOnCopy(pl scheduler.Plugin, p *corev1.Pod, nodeName string, nodes []*corev1.Node, pods []*corev1.Pod) error {
	return runFilterVia(pl, p, nodeName, nodes, pods, func(snap *scheduler.Snapshot, ni *scheduler.NodeInfo) (*scheduler.NodeInfo, error) {
		cp := ni.Clone()
		if snap.Holds(cp) || !snap.Holds(ni) {
			return nil, fmt.Errorf("snapshot holds the copy (%v) or not its own NodeInfo (%v)", snap.Holds(cp), snap.Holds(ni))
		}
		return cp, nil
	})
}
