package plugins

import (
	"context"
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/podkit/podkit/scheduler"
)

// PodTopologySpreadName is the plugin's name.
const PodTopologySpreadName = "PodTopologySpread"

// PodTopologySpread's rejections.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// PodTopologySpread enforces the pod's topologySpreadConstraints: a
// DoNotSchedule constraint filters out nodes where placing the pod would
// make the skew (pods matching the selector in the node's domain minus the
// fewest in any domain) exceed maxSkew; ScheduleAnyway constraints score
// nodes so less crowded domains win. minDomains, matchLabelKeys and the
// node inclusion policies (nodeAffinityPolicy Honor by default,
// nodeTaintsPolicy Ignore by default) are honoured.
type PodTopologySpread struct {
	// slowPath disables counting from the snapshot's pod groups (tests
	// compare both).
	slowPath bool
}

var (
	_ scheduler.PreFilter         = (*PodTopologySpread)(nil)
	_ scheduler.Filter            = (*PodTopologySpread)(nil)
	_ scheduler.PreScore          = (*PodTopologySpread)(nil)
	_ scheduler.Scorer            = (*PodTopologySpread)(nil)
	_ scheduler.ScoreNormalizer   = (*PodTopologySpread)(nil)
	_ scheduler.EnqueueExtensions = (*PodTopologySpread)(nil)
)

// NewPodTopologySpread returns the plugin.
func NewPodTopologySpread() *PodTopologySpread { return &PodTopologySpread{} }

// Name returns PodTopologySpreadName.
func (*PodTopologySpread) Name() string { return PodTopologySpreadName }

// EventsToRegister: any pod or node change moves counts or domains.
func (*PodTopologySpread) EventsToRegister() scheduler.ClusterEvent { return scheduler.AllEvents }

// spreadConstraint is a parsed topology spread constraint.
type spreadConstraint struct {
	maxSkew        int32
	topologyKey    string
	selector       labels.Selector
	minDomains     int32
	honorAffinity  bool
	honorTaints    bool
	matchesOwnPod  bool
	hostnameScoped bool
}

// constraints parses the pod's constraints with the given action.
func constraints(pod *corev1.Pod, action corev1.UnsatisfiableConstraintAction) ([]spreadConstraint, error) {
	var out []spreadConstraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		for _, k := range c.MatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				r, err := labels.NewRequirement(k, selection.In, []string{v})
				if err != nil {
					return nil, err
				}
				sel = sel.Add(*r)
			}
		}
		sc := spreadConstraint{
			maxSkew:        c.MaxSkew,
			topologyKey:    c.TopologyKey,
			selector:       sel,
			minDomains:     1,
			honorAffinity:  c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorTaints:    c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
			hostnameScoped: c.TopologyKey == corev1.LabelHostname,
		}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		sc.matchesOwnPod = sel.Matches(labels.Set(pod.Labels))
		out = append(out, sc)
	}
	return out, nil
}

// includes applies the constraint's node inclusion policies.
func (c *spreadConstraint) includes(pod *corev1.Pod, node *corev1.Node) bool {
	if c.honorAffinity && hasRequiredNodeAffinity(pod) && !requiredNodeAffinityMatches(pod, node) {
		return false
	}
	if c.honorTaints {
		if _, bad := untoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, noScheduleOrNoExecute); bad {
			return false
		}
	}
	return true
}

// hasAllKeys reports whether the node has every constraint's topology key.
func hasAllKeys(node *corev1.Node, cs []spreadConstraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// topologyValues looks up every constraint's topology value on the node
// into vals, reporting whether the node has them all.
func topologyValues(node *corev1.Node, cs []spreadConstraint, vals []string) bool {
	for i := range cs {
		v, ok := node.Labels[cs[i].topologyKey]
		if !ok {
			return false
		}
		vals[i] = v
	}
	return true
}

// countMatching counts the live pods of namespace ns matching sel,
// remembering verdicts in m (nil: no memo).
func countMatching(pods []*scheduler.PodInfo, sel labels.Selector, ns string, m memo) int {
	n := 0
	for _, pi := range pods {
		p := pi.Pod
		if p.DeletionTimestamp != nil || p.Namespace != ns {
			continue
		}
		eval := func() bool { return sel.Matches(labels.Set(p.Labels)) }
		if m != nil && m.get(pi, eval) || m == nil && eval() {
			n++
		}
	}
	return n
}

const spreadFilterStateKey = "PreFilter" + PodTopologySpreadName

// spreadFilterState holds, per DoNotSchedule constraint, the matching
// pods per domain and the smallest count.
type spreadFilterState struct {
	constraints []spreadConstraint
	// counts[i] are the matching pods per domain, built by walking nodes;
	// or, on the fast path, groups[i] are shared per-domain counts of the
	// matching pod groups (the count of a domain is their sum).
	counts   []map[string]int
	groups   [][]map[string]int32
	minCount []int
}

func (st *spreadFilterState) count(i int, value string) int {
	if st.groups != nil {
		n := 0
		for _, m := range st.groups[i] {
			n += int(m[value])
		}
		return n
	}
	return st.counts[i][value]
}

// fastPath reports whether the constraints can be counted from the
// snapshot's pod groups: a single constraint whose eligible nodes are all
// nodes with its key (no node affinity to honour, taints ignored).
func fastPath(pod *corev1.Pod, cs []spreadConstraint) bool {
	return len(cs) == 1 && !cs[0].honorTaints && !(cs[0].honorAffinity && hasRequiredNodeAffinity(pod))
}

// matchingGroups returns the per-domain counts of the live pod groups of
// the pod's namespace that c selects.
func matchingGroups(snap *scheduler.Snapshot, pod *corev1.Pod, c *spreadConstraint) []map[string]int32 {
	var out []map[string]int32
	for _, g := range snap.PodGroups() {
		rep := g.Pod().Pod
		if g.Terminating() || rep.Namespace != pod.Namespace || !c.selector.Matches(labels.Set(rep.Labels)) {
			continue
		}
		if d := g.DomainCounts(c.topologyKey); len(d) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// PreFilter counts matching pods per domain over every eligible node.
func (pl *PodTopologySpread) PreFilter(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod) error {
	cs, err := constraints(pod, corev1.DoNotSchedule)
	if err != nil {
		return scheduler.Unresolvable("parsing pod topology spread constraints: " + err.Error())
	}
	if len(cs) == 0 {
		return scheduler.ErrSkip
	}
	st := &spreadFilterState{constraints: cs, minCount: make([]int, len(cs))}
	snap := s.Snapshot()
	if !pl.slowPath && fastPath(pod, cs) {
		st.groups = [][]map[string]int32{matchingGroups(snap, pod, &cs[0])}
		domains := snap.NodeDomains(cs[0].topologyKey)
		st.minCount[0] = minOverDomains(domains, st.groups[0], cs[0].minDomains)
		s.Write(spreadFilterStateKey, st)
		return nil
	}
	st.counts = make([]map[string]int, len(cs))
	memos := make([]memo, len(cs))
	for i := range cs {
		st.counts[i] = map[string]int{}
		memos[i] = memo{}
	}
	vals := make([]string, len(cs))
	for _, ni := range snap.List() {
		node := ni.Node()
		if !topologyValues(node, cs, vals) {
			continue
		}
		for i := range cs {
			if !cs[i].includes(pod, node) {
				continue
			}
			n := 0
			if len(ni.Pods) > 0 {
				n = countMatching(ni.Pods, cs[i].selector, pod.Namespace, memos[i])
			}
			if cur, ok := st.counts[i][vals[i]]; !ok || n > 0 {
				st.counts[i][vals[i]] = cur + n
			}
		}
	}
	for i := range cs {
		m := math.MaxInt32
		for _, n := range st.counts[i] {
			m = min(m, n)
		}
		if int32(len(st.counts[i])) < cs[i].minDomains {
			m = 0 // fewer domains than wanted: the empty ones count as 0
		}
		st.minCount[i] = m
	}
	s.Write(spreadFilterStateKey, st)
	return nil
}

// minOverDomains is the smallest sum of the groups' counts over the
// domains (0 when a domain holds none, or when there are fewer domains
// than minDomains; MaxInt32 when there is no domain).
func minOverDomains(domains map[string]int32, groups []map[string]int32, minDomains int32) int {
	if int32(len(domains)) < minDomains {
		return 0 // fewer domains than wanted: the missing ones count as 0
	}
	if len(domains) == 0 {
		return math.MaxInt32
	}
	sums := map[string]int{}
	for _, g := range groups {
		for v, n := range g {
			sums[v] += int(n)
		}
	}
	if len(sums) < len(domains) {
		return 0
	}
	m := math.MaxInt32
	for v := range domains {
		m = min(m, sums[v])
	}
	return m
}

// Filter rejects a node whose domain would exceed maxSkew.
func (*PodTopologySpread) Filter(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) error {
	st, err := scheduler.ReadAs[*spreadFilterState](s, spreadFilterStateKey)
	if err != nil {
		return err
	}
	node := n.Node()
	for i := range st.constraints {
		c := &st.constraints[i]
		value, ok := node.Labels[c.topologyKey]
		if !ok {
			return errNodeLabelNotMatch
		}
		self := 0
		if c.matchesOwnPod {
			self = 1
		}
		if skew := st.count(i, value) + self - st.minCount[i]; skew > int(c.maxSkew) {
			return errConstraintsNotMatch
		}
	}
	return nil
}
