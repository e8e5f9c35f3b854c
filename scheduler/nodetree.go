package scheduler

import corev1 "k8s.io/api/core/v1"

// nodeTree orders node names so that consecutive nodes come from different
// zones: scanning a prefix of the list (percentageOfNodesToScore) still
// sees every zone.
type nodeTree struct {
	zones    map[string][]string
	order    []string // zone keys in insertion order
	numNodes int
}

func newNodeTree() *nodeTree { return &nodeTree{zones: map[string][]string{}} }

// zoneKey identifies a node's failure domain by region and zone labels.
func zoneKey(n *corev1.Node) string {
	l := n.Labels
	region, zone := l[corev1.LabelTopologyRegion], l[corev1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

func (t *nodeTree) add(n *corev1.Node) {
	z := zoneKey(n)
	names, ok := t.zones[z]
	if !ok {
		t.order = append(t.order, z)
	}
	for _, name := range names {
		if name == n.Name {
			return
		}
	}
	t.zones[z] = append(names, n.Name)
	t.numNodes++
}

func (t *nodeTree) remove(n *corev1.Node) bool {
	z := zoneKey(n)
	names := t.zones[z]
	for i, name := range names {
		if name == n.Name {
			t.zones[z] = append(names[:i:i], names[i+1:]...)
			if len(t.zones[z]) == 0 {
				delete(t.zones, z)
				for j, o := range t.order {
					if o == z {
						t.order = append(t.order[:j:j], t.order[j+1:]...)
						break
					}
				}
			}
			t.numNodes--
			return true
		}
	}
	return false
}

func (t *nodeTree) update(old, n *corev1.Node) {
	if old != nil && zoneKey(old) == zoneKey(n) {
		return
	}
	if old != nil {
		t.remove(old)
	}
	t.add(n)
}

// list returns the names, taking one node from each zone in turn.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.numNodes)
	for i := 0; len(out) < t.numNodes; i++ {
		for _, z := range t.order {
			if names := t.zones[z]; i < len(names) {
				out = append(out, names[i])
			}
		}
	}
	return out
}
