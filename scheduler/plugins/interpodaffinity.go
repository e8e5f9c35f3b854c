package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// InterPodAffinityName is the plugin's name.
const InterPodAffinityName = "InterPodAffinity"

// InterPodAffinity's rejections.
const (
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// InterPodAffinityArgs configure InterPodAffinity.
type InterPodAffinityArgs struct {
	// HardPodAffinityWeight is the score weight of existing pods' required
	// affinity terms that the incoming pod matches (default 1, 0..100).
	HardPodAffinityWeight *int32 `json:"hardPodAffinityWeight,omitempty"`
	// IgnorePreferredTermsOfExistingPods skips existing pods' preferred
	// terms when the incoming pod has none.
	IgnorePreferredTermsOfExistingPods bool `json:"ignorePreferredTermsOfExistingPods,omitempty"`
}

// InterPodAffinity enforces required pod affinity and anti-affinity (the
// incoming pod's terms against existing pods, and existing pods'
// anti-affinity terms against the incoming pod) per topology domain, and
// scores nodes by preferred terms.
type InterPodAffinity struct {
	hardWeight     int32
	ignoreExisting bool
}

var (
	_ scheduler.PreFilter         = (*InterPodAffinity)(nil)
	_ scheduler.Filter            = (*InterPodAffinity)(nil)
	_ scheduler.PreScore          = (*InterPodAffinity)(nil)
	_ scheduler.Scorer            = (*InterPodAffinity)(nil)
	_ scheduler.ScoreNormalizer   = (*InterPodAffinity)(nil)
	_ scheduler.EnqueueExtensions = (*InterPodAffinity)(nil)
)

// NewInterPodAffinity returns the plugin.
func NewInterPodAffinity(args InterPodAffinityArgs) (*InterPodAffinity, error) {
	pl := &InterPodAffinity{hardWeight: 1, ignoreExisting: args.IgnorePreferredTermsOfExistingPods}
	if w := args.HardPodAffinityWeight; w != nil {
		if *w < 0 || *w > 100 {
			return nil, fmt.Errorf("%s: hardPodAffinityWeight %d not in [0, 100]: %w", InterPodAffinityName, *w, scheduler.ErrProfile)
		}
		pl.hardWeight = *w
	}
	return pl, nil
}

// Name returns InterPodAffinityName.
func (*InterPodAffinity) Name() string { return InterPodAffinityName }

// EventsToRegister: pods come and go, node labels change domains.
func (*InterPodAffinity) EventsToRegister() scheduler.ClusterEvent {
	return scheduler.PodAdd | scheduler.PodUpdate | scheduler.PodDelete | scheduler.NodeAdd | scheduler.NodeUpdate
}

// termMatches evaluates term against pod, looking up the pod's namespace
// labels only when the term has a namespace selector.
func termMatches(t *scheduler.AffinityTerm, pod *corev1.Pod, snap *scheduler.Snapshot) bool {
	if t.Namespaces[pod.Namespace] {
		return t.Selector.Matches(labelsOf(pod))
	}
	if t.NamespaceSelector == nil {
		return false
	}
	return t.Matches(pod, snap.NamespaceLabels(pod.Namespace))
}

// memo remembers a selector's verdict per pod labels (PodInfo.LabelsID)
// within one cycle.
type memo map[string]bool

func (m memo) get(pi *scheduler.PodInfo, eval func() bool) bool {
	if pi.LabelsID == "" {
		return eval()
	}
	v, ok := m[pi.LabelsID]
	if !ok {
		v = eval()
		m[pi.LabelsID] = v
	}
	return v
}

func matchesAllTerms(terms []scheduler.AffinityTerm, pod *corev1.Pod, snap *scheduler.Snapshot) bool {
	for i := range terms {
		if !termMatches(&terms[i], pod, snap) {
			return false
		}
	}
	return len(terms) > 0
}

const affinityFilterStateKey = "PreFilter" + InterPodAffinityName

// domainCounts are per-domain pod counts of several pod groups (shared,
// read-only maps from the snapshot's index).
type domainCounts []map[string]int32

func (d domainCounts) has(value string) bool {
	for _, m := range d {
		if m[value] > 0 {
			return true
		}
	}
	return false
}

// podsOn counts a group's pods on one of the snapshot's nodes.
type podsOn interface {
	PodsOn(*scheduler.NodeInfo) int32
}

// onNode reports whether a group has a pod on n.
func onNode(groups []podsOn, n *scheduler.NodeInfo) bool {
	for _, g := range groups {
		if g.PodsOn(n) > 0 {
			return true
		}
	}
	return false
}

// existingAntiKey is, for one topology key, the domains holding existing
// pods whose required anti-affinity selects the incoming pod; on, when
// the key identifies nodes, the groups of those pods.
type existingAntiKey struct {
	key     string
	domains domainCounts
	on      []podsOn
}

type affinityFilterState struct {
	pod *scheduler.PodInfo
	// existingAnti: per topology key, the domains holding existing pods
	// whose required anti-affinity selects the incoming pod.
	existingAnti []existingAntiKey
	// antiOn[i], set when the i-th anti-affinity term's key identifies
	// nodes (Snapshot.KeyIdentifiesNodes), holds the groups the term
	// selects: Filter then asks whether one has a pod on the node, where
	// reading the node's label and looking its value up cost several
	// cache misses per node (half the CPU of an anti-affinity benchmark).
	antiOn [][]podsOn
	// affinity[i] / anti[i]: the domains of the i-th required affinity /
	// anti-affinity term's key holding pods the term selects (for
	// affinity, pods matching all the terms).
	affinity, anti []domainCounts
	// affinityAny: some pod matching all affinity terms sits on a node
	// with one of the terms' keys.
	affinityAny bool
}

// PreFilter finds, per topology domain, the pods that the affinity terms
// on both sides select, evaluating each distinct term against each group
// of identical pods once. It skips Filter when no term is involved.
func (*InterPodAffinity) PreFilter(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod) error {
	pi := scheduler.NewPodInfo(pod)
	if pi.ParseError != nil {
		return scheduler.Unresolvable(fmt.Sprintf("parsing pod: %v", pi.ParseError))
	}
	snap := s.Snapshot()
	st := &affinityFilterState{pod: pi,
		affinity: make([]domainCounts, len(pi.RequiredAffinityTerms)), anti: make([]domainCounts, len(pi.RequiredAntiAffinityTerms)),
		antiOn: make([][]podsOn, len(pi.RequiredAntiAffinityTerms))}
	byKey := map[string]int{} // index in st.existingAnti
	for _, g := range snap.AntiAffinityTermGroups() {
		t := g.Term()
		if !termMatches(t, pod, snap) {
			continue
		}
		d := g.DomainCounts()
		if len(d) == 0 {
			continue
		}
		i, ok := byKey[t.TopologyKey]
		if !ok {
			i = len(st.existingAnti)
			byKey[t.TopologyKey] = i
			st.existingAnti = append(st.existingAnti, existingAntiKey{key: t.TopologyKey})
		}
		e := &st.existingAnti[i]
		e.domains = append(e.domains, d)
		if snap.KeyIdentifiesNodes(t.TopologyKey) {
			e.on = append(e.on, g)
		}
	}
	if len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 {
		if len(st.existingAnti) == 0 {
			return scheduler.ErrSkip
		}
		s.Write(affinityFilterStateKey, st)
		return nil
	}
	for _, g := range snap.PodGroups() {
		existing := g.Pod().Pod
		if len(pi.RequiredAffinityTerms) > 0 && matchesAllTerms(pi.RequiredAffinityTerms, existing, snap) {
			for i := range pi.RequiredAffinityTerms {
				if d := g.DomainCounts(pi.RequiredAffinityTerms[i].TopologyKey); len(d) > 0 {
					st.affinity[i] = append(st.affinity[i], d)
					st.affinityAny = true
				}
			}
		}
		for i := range pi.RequiredAntiAffinityTerms {
			t := &pi.RequiredAntiAffinityTerms[i]
			if termMatches(t, existing, snap) {
				if d := g.DomainCounts(t.TopologyKey); len(d) > 0 {
					st.anti[i] = append(st.anti[i], d)
					if snap.KeyIdentifiesNodes(t.TopologyKey) {
						st.antiOn[i] = append(st.antiOn[i], g)
					}
				}
			}
		}
	}
	s.Write(affinityFilterStateKey, st)
	return nil
}

// Filter applies, in order: the incoming pod's required affinity, its
// required anti-affinity, and existing pods' anti-affinity.
func (*InterPodAffinity) Filter(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) error {
	st, err := scheduler.ReadAs[*affinityFilterState](s, affinityFilterStateKey)
	if err != nil {
		return err
	}
	snap := s.Snapshot()
	held := snap.Holds(n) // PodsOn answers for the snapshot's NodeInfos only
	node := n.Node()
	if !satisfiesAffinity(st, node, snap) {
		return errAffinityRulesNotMatch
	}
	for i := range st.anti {
		if len(st.anti[i]) == 0 {
			continue
		}
		if held && st.antiOn[i] != nil {
			if onNode(st.antiOn[i], n) {
				return errAntiAffinityRulesNotMatch
			}
			continue
		}
		if v, ok := node.Labels[st.pod.RequiredAntiAffinityTerms[i].TopologyKey]; ok && st.anti[i].has(v) {
			return errAntiAffinityRulesNotMatch
		}
	}
	for i := range st.existingAnti {
		e := &st.existingAnti[i]
		if held && e.on != nil {
			if onNode(e.on, n) {
				return errExistingAntiAffinityRulesNotMatch
			}
			continue
		}
		if v, ok := node.Labels[e.key]; ok && e.domains.has(v) {
			return errExistingAntiAffinityRulesNotMatch
		}
	}
	return nil
}

// satisfiesAffinity: the node has every term's topology key and each
// domain holds a matching pod. The first pod of a group with affinity to
// itself passes when no pod matches yet and the pod matches its own terms.
func satisfiesAffinity(st *affinityFilterState, node *corev1.Node, snap *scheduler.Snapshot) bool {
	terms := st.pod.RequiredAffinityTerms
	exist := true
	for i := range terms {
		v, ok := node.Labels[terms[i].TopologyKey]
		if !ok {
			return false
		}
		if !st.affinity[i].has(v) {
			exist = false
		}
	}
	if exist {
		return true
	}
	return !st.affinityAny && matchesAllTerms(terms, st.pod.Pod, snap)
}
