package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podkit/podkit/scheduler"
)

func mustAffinity(t *testing.T, args InterPodAffinityArgs) *InterPodAffinity {
	t.Helper()
	pl, err := NewInterPodAffinity(args)
	require.NoError(t, err)
	return pl
}

func TestInterPodAffinityFilter(t *testing.T) {
	host := corev1.LabelHostname
	nodes := spreadNodes()
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		want     map[string]string
	}{
		{
			name: "no terms anywhere",
			pod:  pod("p").obj(), existing: []*corev1.Pod{pod("e").node("a1").labels("app", "db").obj()},
			want: map[string]string{"a1": "", "b1": ""},
		},
		{
			name:     "affinity to a zone with a db pod",
			pod:      pod("p").podAffinity(podTerm(zoneKey, "app", "db")).obj(),
			existing: []*corev1.Pod{pod("e").node("a1").labels("app", "db").obj()},
			want:     map[string]string{"a1": "", "a2": "", "b1": ErrReasonAffinityRulesNotMatch, "b2": ErrReasonAffinityRulesNotMatch},
		},
		{
			name: "affinity with no matching pod and not matching itself",
			pod:  pod("p").podAffinity(podTerm(zoneKey, "app", "db")).obj(),
			want: map[string]string{"a1": ErrReasonAffinityRulesNotMatch},
		},
		{
			name: "first pod of a group with affinity to itself",
			pod:  pod("p").labels("app", "db").podAffinity(podTerm(zoneKey, "app", "db")).obj(),
			want: map[string]string{"a1": "", "b1": ""},
		},
		{
			name:     "affinity in another namespace does not match",
			pod:      pod("p").podAffinity(podTerm(zoneKey, "app", "db")).obj(),
			existing: []*corev1.Pod{pod("e").ns("other").node("a1").labels("app", "db").obj()},
			want:     map[string]string{"a1": ErrReasonAffinityRulesNotMatch},
		},
		{
			name:     "anti-affinity to itself across replicas (hostname)",
			pod:      pod("p").labels("app", "web").podAntiAffinity(podTerm(host, "app", "web")).obj(),
			existing: []*corev1.Pod{pod("e1").node("a1").labels("app", "web").obj(), pod("e2").node("b1").labels("app", "web").obj()},
			want:     map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": "", "b1": ErrReasonAntiAffinityRulesNotMatch, "b2": ""},
		},
		{
			name:     "anti-affinity by zone",
			pod:      pod("p").podAntiAffinity(podTerm(zoneKey, "app", "web")).obj(),
			existing: []*corev1.Pod{pod("e1").node("a1").labels("app", "web").obj()},
			want:     map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": ErrReasonAntiAffinityRulesNotMatch, "b1": ""},
		},
		{
			name:     "existing pod's anti-affinity rejects the incoming pod",
			pod:      pod("p").labels("app", "web").obj(),
			existing: []*corev1.Pod{pod("e1").node("a1").podAntiAffinity(podTerm(zoneKey, "app", "web")).obj()},
			want:     map[string]string{"a1": ErrReasonExistingAntiAffinityRulesNotMatch, "a2": ErrReasonExistingAntiAffinityRulesNotMatch, "b1": ""},
		},
		{
			name:     "node missing the affinity topology key",
			pod:      pod("p").podAffinity(podTerm("rack", "app", "db")).obj(),
			existing: []*corev1.Pod{pod("e").node("a1").labels("app", "db").obj()},
			want:     map[string]string{"a1": ErrReasonAffinityRulesNotMatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n, want := range tt.want {
				err := runFilter(mustAffinity(t, InterPodAffinityArgs{}), tt.pod, n, nodes, tt.existing)
				assert.Equal(t, want, reasonsOf(err), "node %s", n)
			}
		})
	}
}

func TestInterPodAffinityNamespaceSelector(t *testing.T) {
	nodes := spreadNodes()
	existing := []*corev1.Pod{pod("e").ns("prod").node("a1").labels("app", "db").obj()}
	term := podTerm(zoneKey, "app", "db")
	term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	p := pod("p").podAffinity(term).obj()

	snap := scheduler.NewSnapshot(existing, nodes)
	snap.SetNamespaceLabels(func(ns string) labels.Set {
		if ns == "prod" {
			return labels.Set{"env": "prod"}
		}
		return nil
	})
	s := scheduler.NewCycleState(snap)
	pl := mustAffinity(t, InterPodAffinityArgs{})
	require.NoError(t, pl.PreFilter(t.Context(), s, p))
	a1, _ := snap.Get("a1")
	b1, _ := snap.Get("b1")
	assert.NoError(t, pl.Filter(t.Context(), s, p, a1))
	assert.Equal(t, ErrReasonAffinityRulesNotMatch, reasonsOf(pl.Filter(t.Context(), s, p, b1)))

	// An empty namespace selector selects every namespace.
	term.NamespaceSelector = &metav1.LabelSelector{}
	p = pod("p").podAffinity(term).obj()
	assert.Equal(t, "", reasonsOf(runFilter(pl, p, "a1", nodes, existing)))
}

func TestInterPodAffinityScore(t *testing.T) {
	nodes := spreadNodes()
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		args     InterPodAffinityArgs
		want     map[string]int64
	}{
		{"nothing to score skips", pod("p").obj(), []*corev1.Pod{pod("e").node("a1").obj()}, InterPodAffinityArgs{}, nil},
		{
			"preferred affinity to the zone of a cache",
			pod("p").preferredPodAffinity(10, podTerm(zoneKey, "app", "cache")).obj(),
			[]*corev1.Pod{pod("e").node("a1").labels("app", "cache").obj()}, InterPodAffinityArgs{},
			map[string]int64{"a1": 100, "a2": 100, "b1": 0, "b2": 0},
		},
		{
			"preferred anti-affinity",
			pod("p").preferredPodAntiAffinity(10, podTerm(corev1.LabelHostname, "app", "web")).obj(),
			[]*corev1.Pod{pod("e").node("a1").labels("app", "web").obj()}, InterPodAffinityArgs{},
			map[string]int64{"a1": 0, "a2": 100, "b1": 100, "b2": 100},
		},
		{
			"existing pod's required affinity attracts with the hard weight",
			pod("p").labels("app", "web").obj(),
			[]*corev1.Pod{pod("e").node("b1").podAffinity(podTerm(zoneKey, "app", "web")).obj()}, InterPodAffinityArgs{},
			map[string]int64{"a1": 0, "a2": 0, "b1": 100, "b2": 100},
		},
		{
			"hard weight 0 ignores it",
			pod("p").labels("app", "web").obj(),
			[]*corev1.Pod{pod("e").node("b1").podAffinity(podTerm(zoneKey, "app", "web")).obj()}, InterPodAffinityArgs{HardPodAffinityWeight: new(int32)},
			nil,
		},
		{
			"existing pod's preferred anti-affinity repels",
			pod("p").labels("app", "web").obj(),
			[]*corev1.Pod{pod("e").node("a1").preferredPodAntiAffinity(5, podTerm(zoneKey, "app", "web")).obj()}, InterPodAffinityArgs{},
			map[string]int64{"a1": 0, "a2": 0, "b1": 100, "b2": 100},
		},
		{
			"existing preferred terms ignored on request",
			pod("p").labels("app", "web").obj(),
			[]*corev1.Pod{pod("e").node("a1").preferredPodAntiAffinity(5, podTerm(zoneKey, "app", "web")).obj()},
			InterPodAffinityArgs{IgnorePreferredTermsOfExistingPods: true}, nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runScore(mustAffinity(t, tt.args), tt.pod, nodes, tt.existing)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestInterPodAffinityArgs(t *testing.T) {
	w := int32(101)
	_, err := NewInterPodAffinity(InterPodAffinityArgs{HardPodAffinityWeight: &w})
	assert.ErrorIs(t, err, scheduler.ErrProfile)
}
