package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestPodNodeAffinity(t *testing.T) {
	req := func(r ...corev1.NodeSelectorRequirement) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: r}}}}}
		}
	}
	const base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
	runPodCases(t, []podCase{
		{"In with values", req(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}), nil},
		{"In without values", req(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn}), []want{{field.ErrorTypeRequired, base + ".values", "'In' or 'NotIn'"}}},
		{"NotIn without values", req(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpNotIn}), []want{{field.ErrorTypeRequired, base + ".values", ""}}},
		{"Exists with values", req(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists, Values: []string{"a"}}),
			[]want{forb(base+".values", "'Exists' or 'DoesNotExist'")}},
		{"DoesNotExist ok", req(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpDoesNotExist}), nil},
		{"Gt one integer", req(corev1.NodeSelectorRequirement{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}), nil},
		{"Gt two values", req(corev1.NodeSelectorRequirement{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"4", "5"}}),
			[]want{{field.ErrorTypeRequired, base + ".values", "single value"}}},
		{"Lt not an integer", req(corev1.NodeSelectorRequirement{Key: "cpus", Operator: corev1.NodeSelectorOpLt, Values: []string{"four"}}),
			[]want{inv(base+".values[0]", "integer")}},
		{"unknown operator", req(corev1.NodeSelectorRequirement{Key: "zone", Operator: "Near"}), []want{inv(base+".operator", "not a valid selector operator")}},
		{"bad key", req(corev1.NodeSelectorRequirement{Key: "bad key", Operator: corev1.NodeSelectorOpExists}), []want{inv(base+".key", "")}},
		{"no terms", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []want{{field.ErrorTypeRequired, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "at least one"}}},
		{"preferred weight", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0}}}}
		}, []want{inv("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "1-100")}},
		{"match field by name", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}}}
		}, nil},
	})
}

func TestPodAffinityTerms(t *testing.T) {
	term := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: "kubernetes.io/hostname"}
	runPodCases(t, []podCase{
		{"valid", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		}, nil},
		{"topologyKey required", func(p *corev1.Pod) {
			t := term
			t.TopologyKey = ""
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{t}}}
		}, []want{
			{field.ErrorTypeRequired, "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "can not be empty"},
			inv("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "name part must be non-empty"),
			inv("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "name part must consist of")}},
		{"anti-affinity weight and selector", func(p *corev1.Pod) {
			t := term
			t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 101, PodAffinityTerm: t}}}}
		}, []want{
			inv("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "1-100"),
			inv("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector.matchExpressions[0].operator", "")}},
	})
}

func TestPodTolerations(t *testing.T) {
	tol := func(ts ...corev1.Toleration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Tolerations = ts }
	}
	runPodCases(t, []podCase{
		{"valid", tol(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			corev1.Toleration{Operator: corev1.TolerationOpExists},
			corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}), nil},
		{"exists with value", tol(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Value: "x"}),
			[]want{inv("spec.tolerations[0].operator", "value must be empty when `operator` is 'Exists'")}},
		{"empty key needs exists", tol(corev1.Toleration{Operator: corev1.TolerationOpEqual}), []want{inv("spec.tolerations[0].operator", "operator must be Exists when `key` is empty")}},
		{"bad effect", tol(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: "NoWay"}), []want{notSup("spec.tolerations[0].effect")}},
		{"tolerationSeconds without NoExecute", tol(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr(int64(1))}),
			[]want{inv("spec.tolerations[0].effect", "effect must be 'NoExecute' when `tolerationSeconds` is set")}},
		{"bad operator", tol(corev1.Toleration{Key: "k", Operator: "In"}), []want{notSup("spec.tolerations[0].operator")}},
	})
}

func TestPodTopologySpread(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	c := func(f func(*corev1.TopologySpreadConstraint)) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			tsc := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}
			f(&tsc)
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{tsc}
		}
	}
	runPodCases(t, []podCase{
		{"valid", c(func(*corev1.TopologySpreadConstraint) {}), nil},
		{"maxSkew zero", c(func(x *corev1.TopologySpreadConstraint) { x.MaxSkew = 0 }), []want{inv("spec.topologySpreadConstraints[0].maxSkew", "greater than zero")}},
		{"topologyKey required", c(func(x *corev1.TopologySpreadConstraint) { x.TopologyKey = "" }), []want{
			{field.ErrorTypeRequired, "spec.topologySpreadConstraints[0].topologyKey", "can not be empty"}}},
		{"whenUnsatisfiable", c(func(x *corev1.TopologySpreadConstraint) { x.WhenUnsatisfiable = "Maybe" }), []want{notSup("spec.topologySpreadConstraints[0].whenUnsatisfiable")}},
		{"minDomains with ScheduleAnyway", c(func(x *corev1.TopologySpreadConstraint) {
			x.WhenUnsatisfiable, x.MinDomains = corev1.ScheduleAnyway, ptr(int32(2))
		}), []want{inv("spec.topologySpreadConstraints[0].minDomains", "can only use minDomains if whenUnsatisfiable=DoNotSchedule")}},
		{"duplicate constraint", func(p *corev1.Pod) {
			tsc := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{tsc, tsc}
		}, []want{dup("spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}")}},
	})
}
