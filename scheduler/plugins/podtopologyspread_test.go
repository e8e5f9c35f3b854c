package plugins

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const zoneKey = corev1.LabelTopologyZone

// Four nodes in two zones.
func spreadNodes() []*corev1.Node {
	return []*corev1.Node{
		node("a1").labels(zoneKey, "a").obj(),
		node("a2").labels(zoneKey, "a").obj(),
		node("b1").labels(zoneKey, "b").obj(),
		node("b2").labels(zoneKey, "b").obj(),
	}
}

func TestPodTopologySpreadFilter(t *testing.T) {
	web := func(name, nodeName string) *corev1.Pod { return pod(name).node(nodeName).labels("app", "web").obj() }
	tests := []struct {
		name     string
		pod      *corev1.Pod
		nodes    []*corev1.Node
		existing []*corev1.Pod
		want     map[string]string // node → reasons
	}{
		{
			name: "no constraint",
			pod:  pod("p").labels("app", "web").obj(), nodes: spreadNodes(),
			existing: []*corev1.Pod{web("e1", "a1"), web("e2", "a1")},
			want:     map[string]string{"a1": "", "a2": "", "b1": "", "b2": ""},
		},
		{
			name: "zone skew 1: zone a has 2, b has 0",
			pod:  pod("p").labels("app", "web").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj(), nodes: spreadNodes(),
			existing: []*corev1.Pod{web("e1", "a1"), web("e2", "a2")},
			want:     map[string]string{"a1": ErrReasonConstraintsNotMatch, "a2": ErrReasonConstraintsNotMatch, "b1": "", "b2": ""},
		},
		{
			name: "maxSkew 3 allows the crowded zone",
			pod:  pod("p").labels("app", "web").spread(3, zoneKey, corev1.DoNotSchedule, "app", "web").obj(), nodes: spreadNodes(),
			existing: []*corev1.Pod{web("e1", "a1"), web("e2", "a2")},
			want:     map[string]string{"a1": "", "a2": "", "b1": "", "b2": ""},
		},
		{
			name: "hostname spread",
			pod:  pod("p").labels("app", "web").spread(1, corev1.LabelHostname, corev1.DoNotSchedule, "app", "web").obj(), nodes: spreadNodes(),
			existing: []*corev1.Pod{web("e1", "a1"), web("e2", "a2"), web("e3", "b1")},
			want:     map[string]string{"a1": ErrReasonConstraintsNotMatch, "a2": ErrReasonConstraintsNotMatch, "b1": ErrReasonConstraintsNotMatch, "b2": ""},
		},
		{
			name: "pod not matching its own selector does not add itself",
			pod:  pod("p").labels("app", "other").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj(), nodes: spreadNodes(),
			existing: []*corev1.Pod{web("e1", "a1")},
			want:     map[string]string{"a1": "", "a2": "", "b1": "", "b2": ""},
		},
		{
			name: "other namespaces and terminating pods do not count",
			pod:  pod("p").labels("app", "web").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj(), nodes: spreadNodes(),
			existing: []*corev1.Pod{pod("x").ns("other").node("a1").labels("app", "web").obj()},
			want:     map[string]string{"a1": "", "a2": "", "b1": "", "b2": ""},
		},
		{
			name:  "node without the topology key",
			pod:   pod("p").labels("app", "web").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj(),
			nodes: append(spreadNodes(), node("nozone").obj()),
			want:  map[string]string{"a1": "", "nozone": ErrReasonNodeLabelNotMatch},
		},
		{
			name: "nodes excluded by node affinity are not domains",
			pod: pod("p").labels("app", "web").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").
				requiredNodeAffinity(term(zoneKey, corev1.NodeSelectorOpIn, "a")).obj(),
			nodes: spreadNodes(), existing: []*corev1.Pod{web("e1", "a1")},
			// only zone a counts: a has 1 = min, skew 1+1-1 = 1
			want: map[string]string{"a1": "", "a2": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n, want := range tt.want {
				err := runFilter(NewPodTopologySpread(), tt.pod, n, tt.nodes, tt.existing)
				assert.Equal(t, want, reasonsOf(err), "node %s", n)
			}
		})
	}
}

func TestPodTopologySpreadMinDomains(t *testing.T) {
	p := pod("p").labels("app", "web").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj()
	three := int32(3)
	p.Spec.TopologySpreadConstraints[0].MinDomains = &three
	existing := []*corev1.Pod{pod("e1").node("a1").labels("app", "web").obj(), pod("e2").node("b1").labels("app", "web").obj()}
	// Only 2 zones exist but 3 are wanted: the global minimum is 0, so a
	// zone holding 1 already has skew 2.
	for _, n := range []string{"a1", "b1"} {
		assert.Equal(t, ErrReasonConstraintsNotMatch, reasonsOf(runFilter(NewPodTopologySpread(), p, n, spreadNodes(), existing)))
	}
	p.Spec.TopologySpreadConstraints[0].MinDomains = nil
	assert.Equal(t, "", reasonsOf(runFilter(NewPodTopologySpread(), p, "a1", spreadNodes(), existing)))
}

func TestPodTopologySpreadMatchLabelKeys(t *testing.T) {
	// matchLabelKeys narrows the selector to the pod's own revision.
	p := pod("p").labels("app", "web", "rev", "2").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj()
	p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"rev"}
	existing := []*corev1.Pod{
		pod("old1").node("a1").labels("app", "web", "rev", "1").obj(),
		pod("old2").node("a2").labels("app", "web", "rev", "1").obj(),
	}
	assert.Equal(t, "", reasonsOf(runFilter(NewPodTopologySpread(), p, "a1", spreadNodes(), existing)))
	p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = nil
	assert.Equal(t, ErrReasonConstraintsNotMatch, reasonsOf(runFilter(NewPodTopologySpread(), p, "a1", spreadNodes(), existing)))
}

func TestPodTopologySpreadTaintsPolicy(t *testing.T) {
	nodes := spreadNodes()
	nodes = append(nodes, node("c1").labels(zoneKey, "c").taint("k", "v", corev1.TaintEffectNoSchedule).obj())
	existing := []*corev1.Pod{pod("e1").node("a1").labels("app", "web").obj(), pod("e2").node("b1").labels("app", "web").obj()}
	p := pod("p").labels("app", "web").spread(1, zoneKey, corev1.DoNotSchedule, "app", "web").obj()
	// Ignore (default): the tainted zone c counts as an empty domain, min 0.
	assert.Equal(t, ErrReasonConstraintsNotMatch, reasonsOf(runFilter(NewPodTopologySpread(), p, "a1", nodes, existing)))
	honor := corev1.NodeInclusionPolicyHonor
	p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = &honor
	assert.Equal(t, "", reasonsOf(runFilter(NewPodTopologySpread(), p, "a1", nodes, existing)))
}

func TestPodTopologySpreadScore(t *testing.T) {
	web := func(name, nodeName string) *corev1.Pod { return pod(name).node(nodeName).labels("app", "web").obj() }
	tests := []struct {
		name     string
		pod      *corev1.Pod
		nodes    []*corev1.Node
		existing []*corev1.Pod
		want     map[string]int64
	}{
		{"no ScheduleAnyway constraint skips", pod("p").obj(), spreadNodes(), nil, nil},
		{
			"zone with fewer pods wins",
			pod("p").labels("app", "web").spread(1, zoneKey, corev1.ScheduleAnyway, "app", "web").obj(), spreadNodes(),
			[]*corev1.Pod{web("e1", "a1"), web("e2", "a2"), web("e3", "b1")},
			// weights ln(2+2)=1.386: a = 2*1.386 → 3, b = 1.386 → 1; normalised 100*(3+1-s)/3
			map[string]int64{"a1": 33, "a2": 33, "b1": 100, "b2": 100},
		},
		{
			"hostname spread counts per node",
			pod("p").labels("app", "web").spread(1, corev1.LabelHostname, corev1.ScheduleAnyway, "app", "web").obj(), spreadNodes(),
			[]*corev1.Pod{web("e1", "a1"), web("e2", "a1"), web("e3", "b1")},
			// weight ln(4+2)=1.79: a1 3.58→4, b1 1.79→2, others 0; 100*(4+0-s)/4
			map[string]int64{"a1": 0, "a2": 100, "b1": 50, "b2": 100},
		},
		{
			"nodes without the key are ignored",
			pod("p").labels("app", "web").spread(1, zoneKey, corev1.ScheduleAnyway, "app", "web").obj(),
			append(spreadNodes(), node("nozone").obj()),
			[]*corev1.Pod{web("e1", "a1")},
			map[string]int64{"a1": 0, "a2": 0, "b1": 100, "b2": 100, "nozone": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runScore(NewPodTopologySpread(), tt.pod, tt.nodes, tt.existing)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The fast path (counting from the snapshot's pod groups) and the slow
// path (walking nodes) agree on random clusters.
func TestPodTopologySpreadFastPathMatchesSlowPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	apps := []string{"web", "db", "cache"}
	for round := range 40 {
		var nodes []*corev1.Node
		for i := range 3 + rng.IntN(8) {
			b := node(fmt.Sprintf("n%d", i))
			if rng.IntN(6) > 0 {
				b.labels(zoneKey, fmt.Sprintf("z%d", rng.IntN(4)))
			}
			nodes = append(nodes, b.obj())
		}
		var pods []*corev1.Pod
		for i := range rng.IntN(30) {
			b := pod(fmt.Sprintf("e%d", i)).node(nodes[rng.IntN(len(nodes))].Name).labels("app", apps[rng.IntN(3)])
			if rng.IntN(5) == 0 {
				b.ns("other")
			}
			p := b.obj()
			if rng.IntN(8) == 0 {
				now := metav1.Now()
				p.DeletionTimestamp = &now
			}
			pods = append(pods, p)
		}
		key := zoneKey
		if rng.IntN(3) == 0 {
			key = corev1.LabelHostname
		}
		app := apps[rng.IntN(3)]
		skew := int32(1 + rng.IntN(2))
		incoming := pod("p").labels("app", app).spread(skew, key, corev1.DoNotSchedule, "app", app).obj()
		scoring := pod("q").labels("app", app).spread(skew, key, corev1.ScheduleAnyway, "app", app).obj()
		if rng.IntN(3) == 0 {
			md := int32(1 + rng.IntN(5))
			incoming.Spec.TopologySpreadConstraints[0].MinDomains = &md
		}
		for _, n := range nodes {
			fast := runFilter(NewPodTopologySpread(), incoming, n.Name, nodes, pods)
			slow := runFilter(&PodTopologySpread{slowPath: true}, incoming, n.Name, nodes, pods)
			require.Equal(t, reasonsOf(slow), reasonsOf(fast), "round %d node %s", round, n.Name)
		}
		fast, err := runScore(NewPodTopologySpread(), scoring, nodes, pods)
		require.NoError(t, err)
		slow, err := runScore(&PodTopologySpread{slowPath: true}, scoring, nodes, pods)
		require.NoError(t, err)
		require.Equal(t, slow, fast, "round %d", round)
	}
}
