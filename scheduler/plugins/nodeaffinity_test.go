package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestNodeAffinityFilter(t *testing.T) {
	n := node("n1").labels("zone", "a", "disk", "ssd", "cores", "8").obj()
	const (
		in    = corev1.NodeSelectorOpIn
		notIn = corev1.NodeSelectorOpNotIn
		ex    = corev1.NodeSelectorOpExists
		dne   = corev1.NodeSelectorOpDoesNotExist
		gt    = corev1.NodeSelectorOpGt
		lt    = corev1.NodeSelectorOpLt
	)
	fields := func(op corev1.NodeSelectorOperator, names ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: names}}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		args NodeAffinityArgs
		want string
	}{
		{"nothing required", pod("p").obj(), NodeAffinityArgs{}, ""},
		{"nodeSelector matches", pod("p").nodeSelector("zone", "a", "disk", "ssd").obj(), NodeAffinityArgs{}, ""},
		{"nodeSelector value differs", pod("p").nodeSelector("zone", "b").obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"nodeSelector label missing", pod("p").nodeSelector("gpu", "yes").obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"In", pod("p").requiredNodeAffinity(term("zone", in, "a", "b")).obj(), NodeAffinityArgs{}, ""},
		{"In not matching", pod("p").requiredNodeAffinity(term("zone", in, "b", "c")).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"In with no values is invalid", pod("p").requiredNodeAffinity(term("zone", in)).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"NotIn", pod("p").requiredNodeAffinity(term("zone", notIn, "b")).obj(), NodeAffinityArgs{}, ""},
		{"NotIn matching value", pod("p").requiredNodeAffinity(term("zone", notIn, "a")).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"NotIn on a missing label", pod("p").requiredNodeAffinity(term("gpu", notIn, "x")).obj(), NodeAffinityArgs{}, ""},
		{"Exists", pod("p").requiredNodeAffinity(term("disk", ex)).obj(), NodeAffinityArgs{}, ""},
		{"Exists missing", pod("p").requiredNodeAffinity(term("gpu", ex)).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"DoesNotExist", pod("p").requiredNodeAffinity(term("gpu", dne)).obj(), NodeAffinityArgs{}, ""},
		{"DoesNotExist present", pod("p").requiredNodeAffinity(term("disk", dne)).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"Gt", pod("p").requiredNodeAffinity(term("cores", gt, "4")).obj(), NodeAffinityArgs{}, ""},
		{"Gt not greater", pod("p").requiredNodeAffinity(term("cores", gt, "8")).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"Lt", pod("p").requiredNodeAffinity(term("cores", lt, "16")).obj(), NodeAffinityArgs{}, ""},
		{"Lt with a non-integer value", pod("p").requiredNodeAffinity(term("cores", lt, "x")).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"Gt on a non-integer label", pod("p").requiredNodeAffinity(term("zone", gt, "1")).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"terms are ORed", pod("p").requiredNodeAffinity(term("zone", in, "b"), term("disk", in, "ssd")).obj(), NodeAffinityArgs{}, ""},
		{"expressions are ANDed", pod("p").requiredNodeAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: in, Values: []string{"a"}}, {Key: "disk", Operator: in, Values: []string{"hdd"}}}}).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"empty term matches nothing", pod("p").requiredNodeAffinity(corev1.NodeSelectorTerm{}).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"no terms match nothing", pod("p").requiredNodeAffinity().obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"matchFields metadata.name In", pod("p").requiredNodeAffinity(fields(in, "n1")).obj(), NodeAffinityArgs{}, ""},
		{"matchFields metadata.name NotIn", pod("p").requiredNodeAffinity(fields(notIn, "n1")).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"nodeSelector and affinity both needed", pod("p").nodeSelector("zone", "b").requiredNodeAffinity(term("disk", ex)).obj(), NodeAffinityArgs{}, ErrReasonNodeAffinity},
		{"scheduler-enforced affinity", pod("p").obj(), NodeAffinityArgs{AddedAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term("zone", in, "b")}}}}, ErrReasonEnforcedAffinity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewNodeAffinity(tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, reasonsOf(runFilter(pl, tt.pod, "n1", []*corev1.Node{n}, nil)))
		})
	}
}

func TestNodeAffinityScore(t *testing.T) {
	nodes := []*corev1.Node{
		node("a").labels("zone", "a", "disk", "ssd").obj(),
		node("b").labels("zone", "b", "disk", "ssd").obj(),
		node("c").labels("zone", "c").obj(),
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"no preference skips", pod("p").obj(), nil},
		{"weights summed and normalised", pod("p").
			preferredNodeAffinity(60, term("zone", corev1.NodeSelectorOpIn, "a")).
			preferredNodeAffinity(20, term("disk", corev1.NodeSelectorOpExists)).obj(),
			map[string]int64{"a": 100, "b": 25, "c": 0}},
		{"empty preference term matches every node", pod("p").preferredNodeAffinity(10, corev1.NodeSelectorTerm{}).obj(),
			map[string]int64{"a": 100, "b": 100, "c": 100}},
		{"nothing matches", pod("p").preferredNodeAffinity(10, term("zone", corev1.NodeSelectorOpIn, "z")).obj(),
			map[string]int64{"a": 0, "b": 0, "c": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewNodeAffinity(NodeAffinityArgs{})
			require.NoError(t, err)
			got, err := runScore(pl, tt.pod, nodes, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
