package plugins

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Node selector matching, shared by NodeAffinity and PodTopologySpread.

// matchRequirement evaluates one node selector requirement against a value
// lookup. Invalid requirements (wrong number of values, non-integer Gt/Lt)
// match nothing, as Kubernetes ignores terms that fail to parse.
func matchRequirement(r *corev1.NodeSelectorRequirement, get func(string) (string, bool)) bool {
	v, ok := get(r.Key)
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			return false
		}
		in := false
		if ok {
			for _, x := range r.Values {
				if x == v {
					in = true
					break
				}
			}
		}
		if r.Operator == corev1.NodeSelectorOpIn {
			return in
		}
		return !in
	case corev1.NodeSelectorOpExists:
		return len(r.Values) == 0 && ok
	case corev1.NodeSelectorOpDoesNotExist:
		return len(r.Values) == 0 && !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			return false
		}
		want, err := strconv.ParseInt(r.Values[0], 10, 64)
		if err != nil || !ok {
			return false
		}
		have, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

// matchTerm evaluates a node selector term: all expressions on labels and
// all fields (only metadata.name, with In / NotIn) must match. An empty
// term matches only when allowEmpty (preferred terms).
func matchTerm(t *corev1.NodeSelectorTerm, node *corev1.Node, allowEmpty bool) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return allowEmpty
	}
	labelsOf := func(k string) (string, bool) { v, ok := node.Labels[k]; return v, ok }
	for i := range t.MatchExpressions {
		if !matchRequirement(&t.MatchExpressions[i], labelsOf) {
			return false
		}
	}
	fieldsOf := func(k string) (string, bool) {
		if k == "metadata.name" {
			return node.Name, true
		}
		return "", false
	}
	for i := range t.MatchFields {
		f := &t.MatchFields[i]
		if f.Key != "metadata.name" || (f.Operator != corev1.NodeSelectorOpIn && f.Operator != corev1.NodeSelectorOpNotIn) {
			return false
		}
		if !matchRequirement(f, fieldsOf) {
			return false
		}
	}
	return true
}

// matchNodeSelector reports whether any term of sel matches node.
func matchNodeSelector(sel *corev1.NodeSelector, node *corev1.Node) bool {
	for i := range sel.NodeSelectorTerms {
		if matchTerm(&sel.NodeSelectorTerms[i], node, false) {
			return true
		}
	}
	return false
}

// requiredNodeAffinityMatches reports whether node satisfies the pod's
// nodeSelector and required node affinity.
func requiredNodeAffinityMatches(pod *corev1.Pod, node *corev1.Node) bool {
	for k, v := range pod.Spec.NodeSelector {
		if lv, ok := node.Labels[k]; !ok || lv != v {
			return false
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return matchNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node)
	}
	return true
}

// hasRequiredNodeAffinity reports whether the pod restricts nodes by
// nodeSelector or required node affinity.
func hasRequiredNodeAffinity(pod *corev1.Pod) bool {
	if len(pod.Spec.NodeSelector) > 0 {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}
