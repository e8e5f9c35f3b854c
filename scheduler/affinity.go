package scheduler

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// AffinityTerm is a parsed pod (anti-)affinity term: which pods it selects
// (namespaces and label selector) and the topology it applies across.
type AffinityTerm struct {
	// Namespaces the term selects by name; with a nil NamespaceSelector and
	// no names, the owning pod's namespace.
	Namespaces map[string]bool
	// NamespaceSelector selects namespaces by label; nil selects none by
	// label (an empty selector {} selects all namespaces).
	NamespaceSelector labels.Selector
	Selector          labels.Selector
	TopologyKey       string
	// ID is a canonical form of the term: the terms of pods of one
	// workload have equal IDs, so plugins can evaluate each once per cycle.
	ID string
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod, in a namespace labelled nsLabels, is
// selected by the term.
func (t *AffinityTerm) Matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces[pod.Namespace] || (t.NamespaceSelector != nil && t.NamespaceSelector.Matches(nsLabels)) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// newAffinityTerm parses term for the pod that owns it. matchLabelKeys and
// mismatchLabelKeys become In / NotIn requirements on the owning pod's
// label values, as the API server merges them.
func newAffinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm) (AffinityTerm, error) {
	sel := labels.Nothing()
	if term.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			return AffinityTerm{}, err
		}
		sel = s
		for _, keys := range []struct {
			keys []string
			op   selection.Operator
		}{{term.MatchLabelKeys, selection.In}, {term.MismatchLabelKeys, selection.NotIn}} {
			for _, k := range keys.keys {
				v, ok := pod.Labels[k]
				if !ok {
					continue
				}
				r, err := labels.NewRequirement(k, keys.op, []string{v})
				if err != nil {
					return AffinityTerm{}, err
				}
				sel = sel.Add(*r)
			}
		}
	}
	at := AffinityTerm{Selector: sel, TopologyKey: term.TopologyKey, Namespaces: map[string]bool{}}
	for _, ns := range term.Namespaces {
		at.Namespaces[ns] = true
	}
	if term.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, err
		}
		at.NamespaceSelector = s
	}
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		at.Namespaces[pod.Namespace] = true
	}
	at.ID = termID(&at)
	return at, nil
}

// termID renders a term canonically: topology key, sorted namespaces,
// namespace selector and label selector (whose String is sorted).
func termID(t *AffinityTerm) string {
	var b strings.Builder
	b.WriteString(t.TopologyKey)
	b.WriteByte(0)
	nss := make([]string, 0, len(t.Namespaces))
	for ns := range t.Namespaces {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	b.WriteString(strings.Join(nss, ","))
	b.WriteByte(0)
	if t.NamespaceSelector != nil {
		b.WriteString("ns:")
		b.WriteString(t.NamespaceSelector.String())
	}
	b.WriteByte(0)
	b.WriteString(t.Selector.String())
	return b.String()
}

func affinityTerms(pod *corev1.Pod, terms []corev1.PodAffinityTerm) ([]AffinityTerm, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func weightedAffinityTerms(pod *corev1.Pod, terms []corev1.WeightedPodAffinityTerm) ([]WeightedAffinityTerm, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		if terms[i].Weight == 0 {
			continue
		}
		t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			return nil, err
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out, nil
}
