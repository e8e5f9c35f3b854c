package scheduler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Snapshot is the immutable view of the cluster a scheduling cycle works
// on: every node with the pods counted on it. The scheduler refreshes one
// Snapshot incrementally from its Cache at the start of each cycle; plugins
// reach it through CycleState.Snapshot.
type Snapshot struct {
	nodeInfoMap map[string]*NodeInfo
	// nodeInfoList is in the cache's zone-interleaved order.
	nodeInfoList                     []*NodeInfo
	havePodsWithAffinity             []*NodeInfo
	havePodsWithRequiredAntiAffinity []*NodeInfo
	imageNodes                       map[string]int
	imageGeneration                  int64
	generation                       int64
	namespaceLabels                  func(namespace string) labels.Set
	index                            podIndex
	// nodeDomains caches NodeDomains; dropped when nodes change.
	nodeDomains map[string]map[string]int32
}

// NewEmptySnapshot returns a snapshot to be filled by Cache.UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*NodeInfo{}, imageNodes: map[string]int{}}
}

// NewSnapshot builds a snapshot from nodes and the pods on them (pods whose
// spec.nodeName names no node are ignored), in the nodes' order. It is meant
// for tests and tools.
func NewSnapshot(pods []*corev1.Pod, nodes []*corev1.Node) *Snapshot {
	s := NewEmptySnapshot()
	for _, n := range nodes {
		ni := NewNodeInfo(n)
		s.nodeInfoMap[n.Name] = ni
		s.nodeInfoList = append(s.nodeInfoList, ni)
		for name := range ni.Images {
			s.imageNodes[name]++
		}
	}
	for _, p := range pods {
		if ni, ok := s.nodeInfoMap[p.Spec.NodeName]; ok {
			ni.AddPodInfo(NewPodInfo(p))
		}
	}
	for _, ni := range s.nodeInfoList {
		ni.snapshot = s
		s.index.account(ni, ni.Node(), ni.Pods, 1)
	}
	s.rebuildAffinityLists()
	return s
}

// SetNamespaceLabels sets the lookup of namespace labels used by
// namespaceSelector in pod affinity terms.
func (s *Snapshot) SetNamespaceLabels(f func(namespace string) labels.Set) { s.namespaceLabels = f }

// NamespaceLabels returns the labels of a namespace (nil if unknown).
func (s *Snapshot) NamespaceLabels(namespace string) labels.Set {
	if s.namespaceLabels == nil {
		return nil
	}
	return s.namespaceLabels(namespace)
}

// List returns every node.
func (s *Snapshot) List() []*NodeInfo { return s.nodeInfoList }

// NumNodes returns the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

// HavePodsWithAffinityList returns the nodes with at least one pod that has
// a pod affinity or anti-affinity term.
func (s *Snapshot) HavePodsWithAffinityList() []*NodeInfo { return s.havePodsWithAffinity }

// HavePodsWithRequiredAntiAffinityList returns the nodes with at least one
// pod that has a required anti-affinity term.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*NodeInfo {
	return s.havePodsWithRequiredAntiAffinity
}

// Get returns the node named name.
func (s *Snapshot) Get(name string) (*NodeInfo, error) {
	ni, ok := s.nodeInfoMap[name]
	if !ok || ni.Node() == nil {
		return nil, fmt.Errorf("node %q: %w", name, ErrNotFound)
	}
	return ni, nil
}

// ImageNumNodes returns how many nodes hold the image (normalised name).
func (s *Snapshot) ImageNumNodes(image string) int { return s.imageNodes[image] }

func (s *Snapshot) rebuildAffinityLists() {
	s.havePodsWithAffinity = s.havePodsWithAffinity[:0]
	s.havePodsWithRequiredAntiAffinity = s.havePodsWithRequiredAntiAffinity[:0]
	for _, ni := range s.nodeInfoList {
		if len(ni.PodsWithAffinity) > 0 {
			s.havePodsWithAffinity = append(s.havePodsWithAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.havePodsWithRequiredAntiAffinity = append(s.havePodsWithRequiredAntiAffinity, ni)
		}
	}
}

// The nodes of a snapshot are laid out in memory in the order cycles walk
// them. A cycle on a large cluster filters and scores hundreds of nodes
// (10% of 5,000 by default), and the first plugin to touch each NodeInfo
// paid a cache miss when NodeInfos lay wherever they happened to be
// allocated (NodeUnschedulable.Filter, the first filter, was 6% of a
// whole scheduler benchmark's CPU, about 110 ns per node). Nodes that
// arrive together (the initial list, a scale-up) are therefore placed in
// one array in the tree's order, so a cycle's walk reads memory
// sequentially and the hardware prefetcher hides the latency. Updates
// overwrite a NodeInfo in place, so the layout (and the pointers the
// snapshot's index keys on) stay put; a deleted node's slot is freed with
// the last live NodeInfo of its array.

// newSnapshotNodes returns the names of the changed nodes that s does not
// hold yet. The caller holds c.mu.
func (c *Cache) newSnapshotNodes(s *Snapshot) map[string]bool {
	var fresh map[string]bool
	for it := c.head; it != nil && it.info.Generation > s.generation; it = it.next {
		node := it.info.Node()
		if node == nil {
			continue
		}
		if _, ok := s.nodeInfoMap[node.Name]; !ok {
			if fresh == nil {
				fresh = map[string]bool{}
			}
			fresh[node.Name] = true
		}
	}
	return fresh
}

// place gives each node named in fresh an empty NodeInfo in s, all in one
// array in the order the names come in order (names missing from order,
// which the tree always holds, go last).
func (s *Snapshot) place(fresh map[string]bool, order []string) {
	slab := make([]NodeInfo, len(fresh))
	for i := range slab {
		slab[i].snapshot = s
	}
	next := 0
	for _, name := range order {
		if fresh[name] {
			s.nodeInfoMap[name] = &slab[next]
			next++
			delete(fresh, name)
		}
	}
	for name := range fresh {
		s.nodeInfoMap[name] = &slab[next]
		next++
	}
}

// Holds reports whether n is one of the snapshot's own NodeInfos (not a
// copy or a NodeInfo built elsewhere). Per-node lookups keyed by the
// snapshot's NodeInfos (PodGroup.PodsOn) hold only for those.
func (s *Snapshot) Holds(n *NodeInfo) bool { return n != nil && n.snapshot == s }
