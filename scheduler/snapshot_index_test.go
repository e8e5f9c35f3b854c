package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// indexView renders a snapshot's index for comparison.
func indexView(s *Snapshot) map[string]map[string]int32 {
	out := map[string]map[string]int32{}
	for key, g := range s.PodGroups() {
		out["pods/"+key+"/zone"] = g.DomainCounts(corev1.LabelTopologyZone)
		out["pods/"+key+"/host"] = g.DomainCounts(corev1.LabelHostname)
	}
	for id, g := range s.AntiAffinityTermGroups() {
		out["terms/"+id] = g.DomainCounts()
	}
	out["nodes/zone"] = s.NodeDomains(corev1.LabelTopologyZone)
	out["scoring-affinity"] = map[string]int32{"pods": int32(s.NumPodsWithScoringAffinity())}
	return out
}

// The incrementally maintained index equals one built from scratch,
// through random pod and node changes (the domain counts asked for early
// must stay correct as nodes and pods change).
func TestSnapshotIndexIncremental(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := NewCache()
	s := NewEmptySnapshot()
	nodes := map[string]*corev1.Node{}
	pods := map[string]*corev1.Pod{}
	mkNode := func(name string) *corev1.Node {
		n := cnode(name, fmt.Sprintf("z%d", rng.IntN(3)), "100")
		n.Labels[corev1.LabelHostname] = name
		return n
	}
	for i := range 6 {
		n := mkNode(fmt.Sprintf("n%d", i))
		nodes[n.Name] = n
		c.AddNode(n)
	}
	sawScoring := false
	for step := range 400 {
		switch op := rng.IntN(10); {
		case op < 5: // add a pod
			var names []string
			for n := range nodes {
				names = append(names, n)
			}
			if len(names) == 0 {
				continue
			}
			p := cpod(fmt.Sprintf("p%d", step), names[rng.IntN(len(names))], "")
			p.Labels = map[string]string{"app": fmt.Sprintf("a%d", rng.IntN(3))}
			if rng.IntN(3) == 0 {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelTopologyZone}}}}
			}
			if rng.IntN(4) == 0 { // a term that scores other pods
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelHostname}}}}}
			}
			if rng.IntN(2) == 0 {
				require.NoError(t, c.AssumePod(p))
			} else {
				require.NoError(t, c.AddPod(p))
			}
			pods[p.Name] = p
		case op < 6: // remove a pod
			for name, p := range pods {
				require.NoError(t, c.RemovePod(p))
				delete(pods, name)
				break
			}
		case op < 7: // a pod starts terminating (its group changes)
			for name, p := range pods {
				if p.DeletionTimestamp != nil {
					continue
				}
				q := p.DeepCopy()
				q.DeletionTimestamp = &metav1.Time{}
				require.NoError(t, c.UpdatePod(p, q))
				pods[name] = q
				break
			}
		case op < 8: // relabel a node
			for name := range nodes {
				n := mkNode(name)
				nodes[name] = n
				c.UpdateNode(nil, n)
				break
			}
		case op < 9: // delete a node (its pods stay counted, unseen)
			for name, n := range nodes {
				require.NoError(t, c.RemoveNode(n))
				delete(nodes, name)
				break
			}
		default: // add a node
			n := mkNode(fmt.Sprintf("m%d", step))
			nodes[n.Name] = n
			c.AddNode(n)
		}
		if rng.IntN(3) == 0 && step < 399 {
			continue // let several changes pile up before the next update
		}
		c.UpdateSnapshot(s)
		sawScoring = sawScoring || s.NumPodsWithScoringAffinity() > 0
		got := indexView(s)
		var ps []*corev1.Pod
		for _, p := range pods {
			ps = append(ps, p)
		}
		var ns []*corev1.Node
		for _, n := range nodes {
			ns = append(ns, n)
		}
		require.Equal(t, indexView(NewSnapshot(ps, ns)), got, "step %d", step)
	}
	require.True(t, sawScoring, "some step counted pods with scoring affinity")
}
