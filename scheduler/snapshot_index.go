package scheduler

import corev1 "k8s.io/api/core/v1"

// The snapshot indexes its pods two ways, so selector-matching plugins
// (InterPodAffinity, PodTopologySpread) evaluate each distinct selector
// once per group instead of once per pod, and read per-domain counts
// instead of walking every node:
//
//   - PodGroup: the pods sharing namespace, labels and terminating state;
//   - TermGroup: the existing pods' required anti-affinity terms, by ID.
//
// Each group counts its pods per node and, for the topology keys asked for,
// per domain. The index is updated incrementally with the changed nodes.
// The domain counts are built lazily: ask for them in PreFilter or
// PreScore (which run one at a time), read them anywhere; never modify.

// PodGroup is a set of pods with equal PodInfo.LabelsID and terminating
// state (pods of one workload).
type PodGroup struct {
	rep         *PodInfo
	terminating bool
	counter
}

// Pod returns a pod of the group (namespace and labels are what matter).
func (g *PodGroup) Pod() *PodInfo { return g.rep }

// Terminating reports whether the group's pods are being deleted.
func (g *PodGroup) Terminating() bool { return g.terminating }

// TermGroup is the set of existing pods that carry one required
// anti-affinity term (by AffinityTerm.ID).
type TermGroup struct {
	term *AffinityTerm
	counter
}

// Term returns the group's term.
func (g *TermGroup) Term() *AffinityTerm { return g.term }

// DomainCounts returns the group's pods per value of its term's topology
// key (nodes without the key are not counted). Read-only.
func (g *TermGroup) DomainCounts() map[string]int32 { return g.domainCounts(g.term.TopologyKey) }

// counter counts a group's pods per node and per topology domain.
type counter struct {
	nodes   map[*NodeInfo]int32
	domains map[string]map[string]int32 // topology key → value → pods
}

// DomainCounts returns the group's pods per value of topologyKey (nodes
// without the key are not counted). Read-only; build it outside the
// parallel Filter and Score phases.
func (c *counter) DomainCounts(topologyKey string) map[string]int32 {
	return c.domainCounts(topologyKey)
}

func (c *counter) domainCounts(key string) map[string]int32 {
	if m, ok := c.domains[key]; ok {
		return m
	}
	m := map[string]int32{}
	for ni, n := range c.nodes {
		if v, ok := ni.Node().Labels[key]; ok {
			m[v] += n
		}
	}
	if c.domains == nil {
		c.domains = map[string]map[string]int32{}
	}
	c.domains[key] = m
	return m
}

// add counts delta pods on ni, whose node object (for domains) is node.
func (c *counter) add(ni *NodeInfo, node *corev1.Node, delta int32) {
	if c.nodes == nil {
		c.nodes = map[*NodeInfo]int32{}
	}
	if n := c.nodes[ni] + delta; n > 0 {
		c.nodes[ni] = n
	} else {
		delete(c.nodes, ni)
	}
	for key, m := range c.domains {
		if v, ok := node.Labels[key]; ok {
			if n := m[v] + delta; n > 0 {
				m[v] = n
			} else {
				delete(m, v)
			}
		}
	}
}

func (c *counter) empty() bool { return len(c.nodes) == 0 }

// PodsOn returns how many of the group's pods are on ni, one of the
// snapshot's own NodeInfos (see Snapshot.Holds). Read-only.
func (c *counter) PodsOn(ni *NodeInfo) int32 { return c.nodes[ni] }

// podIndex is the Snapshot's index.
type podIndex struct {
	pods  map[string]*PodGroup
	terms map[string]*TermGroup
	// scoringAffinityPods counts the pods with terms that score other
	// pods: required pod affinity or preferred (anti-)affinity.
	scoringAffinityPods int
}

func podGroupKey(pi *PodInfo) string {
	if pi.Pod.DeletionTimestamp != nil {
		return pi.LabelsID + "\x00terminating"
	}
	return pi.LabelsID
}

// account adds (sign 1) or removes (sign -1) the pods of ni, on node
// object node, to the index.
func (x *podIndex) account(ni *NodeInfo, node *corev1.Node, pods []*PodInfo, sign int32) {
	if node == nil {
		return
	}
	if x.pods == nil {
		x.pods, x.terms = map[string]*PodGroup{}, map[string]*TermGroup{}
	}
	for _, pi := range pods {
		if len(pi.RequiredAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0 {
			x.scoringAffinityPods += int(sign)
		}
		key := podGroupKey(pi)
		g := x.pods[key]
		if g == nil {
			if sign < 0 {
				continue
			}
			g = &PodGroup{rep: pi, terminating: pi.Pod.DeletionTimestamp != nil}
			x.pods[key] = g
		}
		g.add(ni, node, sign)
		if g.empty() {
			delete(x.pods, key)
		}
		for i := range pi.RequiredAntiAffinityTerms {
			t := &pi.RequiredAntiAffinityTerms[i]
			tg := x.terms[t.ID]
			if tg == nil {
				if sign < 0 {
					continue
				}
				tg = &TermGroup{term: t}
				x.terms[t.ID] = tg
			}
			tg.add(ni, node, sign)
			if tg.empty() {
				delete(x.terms, t.ID)
			}
		}
	}
}

// reaccount moves the index of ni, on the unchanged node object node, from
// its pods before to its pods after. PodInfos are immutable, so a pointer
// at the same position of both lists counts the same and is skipped: the
// cache appends pods and removes them by swapping in the last one, so a
// node that gained or lost a pod differs in a position or two, not in all
// of its (up to a hundred) pods.
func (x *podIndex) reaccount(ni *NodeInfo, node *corev1.Node, before, after []*PodInfo) {
	n := min(len(before), len(after))
	for i := 0; i < n; i++ {
		if before[i] != after[i] {
			x.account(ni, node, before[i:i+1], -1)
			x.account(ni, node, after[i:i+1], 1)
		}
	}
	x.account(ni, node, before[n:], -1)
	x.account(ni, node, after[n:], 1)
}

// NumPodsWithScoringAffinity returns how many pods have terms that weigh
// on where other pods go: required pod affinity, preferred pod affinity
// or anti-affinity (required anti-affinity only filters). When none do,
// scoring need not walk the pods with affinity.
func (s *Snapshot) NumPodsWithScoringAffinity() int { return s.index.scoringAffinityPods }

// PodGroups returns the groups of pods, keyed by LabelsID (with a suffix
// for terminating pods). Read-only.
func (s *Snapshot) PodGroups() map[string]*PodGroup { return s.index.pods }

// AntiAffinityTermGroups returns the existing pods' required anti-affinity
// terms, keyed by AffinityTerm.ID. Read-only.
func (s *Snapshot) AntiAffinityTermGroups() map[string]*TermGroup { return s.index.terms }

// KeyIdentifiesNodes reports whether every node has the label
// topologyKey, each with its own value (kubernetes.io/hostname, as a
// rule): a domain of that key is then one node, and "a pod in the node's
// domain" is "a pod on the node" (PodGroup.PodsOn), which spares reading
// the node's labels. Read-only; ask outside the parallel phases.
func (s *Snapshot) KeyIdentifiesNodes(topologyKey string) bool {
	return len(s.nodeInfoList) > 0 && len(s.NodeDomains(topologyKey)) == len(s.nodeInfoList)
}

// NodeDomains returns how many nodes have each value of topologyKey.
// Read-only; build it outside the parallel phases.
func (s *Snapshot) NodeDomains(topologyKey string) map[string]int32 {
	if m, ok := s.nodeDomains[topologyKey]; ok {
		return m
	}
	m := map[string]int32{}
	for _, ni := range s.nodeInfoList {
		if v, ok := ni.Node().Labels[topologyKey]; ok {
			m[v]++
		}
	}
	if s.nodeDomains == nil {
		s.nodeDomains = map[string]map[string]int32{}
	}
	s.nodeDomains[topologyKey] = m
	return m
}
