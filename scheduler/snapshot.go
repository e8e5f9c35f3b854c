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
