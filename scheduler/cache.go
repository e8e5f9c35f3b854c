package scheduler

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cache is the scheduler's view of nodes and of the pods counted on them:
// bound pods seen by the informer, and assumed pods (chosen by a scheduling
// cycle, binding in flight). Assuming a pod makes its requests count on the
// node immediately, so the next cycle does not overcommit it. A bind that
// fails forgets the assumption; the informer's add of the bound pod confirms
// it. It is safe for concurrent use.
type Cache struct {
	mu         sync.Mutex
	nodes      map[string]*nodeItem
	head       *nodeItem // most recently changed first
	tree       *nodeTree
	pods       map[types.UID]*corev1.Pod // every pod counted, by UID
	assumed    map[types.UID]bool
	imageNodes map[string]int
	imageGen   int64
	generation int64
}

// nodeItem is a NodeInfo in the cache's recency list.
type nodeItem struct {
	info       *NodeInfo
	prev, next *nodeItem
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		nodes:      map[string]*nodeItem{},
		tree:       newNodeTree(),
		pods:       map[types.UID]*corev1.Pod{},
		assumed:    map[types.UID]bool{},
		imageNodes: map[string]int{},
	}
}

// touch bumps the node's generation and moves it to the list head.
func (c *Cache) touch(it *nodeItem) {
	c.generation++
	it.info.Generation = c.generation
	if c.head == it {
		return
	}
	c.unlink(it)
	it.next = c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *nodeItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

func (c *Cache) item(name string) *nodeItem {
	it, ok := c.nodes[name]
	if !ok {
		it = &nodeItem{info: &NodeInfo{}}
		c.nodes[name] = it
	}
	return it
}

// dropIfEmpty forgets a deleted node once its last pod is gone.
func (c *Cache) dropIfEmpty(name string, it *nodeItem) bool {
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, name)
		return true
	}
	return false
}

func (c *Cache) countImages(imgs map[string]int64, sign int) {
	if len(imgs) == 0 {
		return
	}
	for name := range imgs {
		c.imageNodes[name] += sign
		if c.imageNodes[name] <= 0 {
			delete(c.imageNodes, name)
		}
	}
	c.imageGen++
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.item(node.Name)
	old := it.info.Node()
	c.countImages(it.info.Images, -1)
	it.info.SetNode(node)
	c.countImages(it.info.Images, 1)
	c.tree.update(old, node)
	c.touch(it)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(_, node *corev1.Node) { c.AddNode(node) }

// RemoveNode removes a node; its pods stay counted (on a node-less entry
// invisible to snapshots) until they are removed.
func (c *Cache) RemoveNode(node *corev1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[node.Name]
	if !ok || it.info.Node() == nil {
		return fmt.Errorf("removing node %q: %w", node.Name, ErrNotFound)
	}
	c.countImages(it.info.Images, -1)
	c.tree.remove(it.info.Node())
	it.info.clearNode()
	if !c.dropIfEmpty(node.Name, it) {
		c.touch(it)
	}
	return nil
}

func (c *Cache) addPod(pod *corev1.Pod) {
	it := c.item(pod.Spec.NodeName)
	it.info.AddPodInfo(NewPodInfo(pod))
	c.touch(it)
	c.pods[pod.UID] = pod
}

func (c *Cache) removePod(pod *corev1.Pod) error {
	delete(c.pods, pod.UID)
	it, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("node %q of pod %s/%s: %w", pod.Spec.NodeName, pod.Namespace, pod.Name, ErrNotFound)
	}
	if err := it.info.RemovePod(pod); err != nil {
		return err
	}
	if !c.dropIfEmpty(pod.Spec.NodeName, it) {
		c.touch(it)
	}
	return nil
}

// AssumePod counts pod (whose spec.nodeName is set to the chosen node) on
// its node before the bind completes.
func (c *Cache) AssumePod(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s/%s is already in the cache, cannot be assumed", pod.Namespace, pod.Name)
	}
	c.addPod(pod)
	c.assumed[pod.UID] = true
	return nil
}

// ForgetPod undoes AssumePod after a failed bind.
func (c *Cache) ForgetPod(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.pods[pod.UID]
	if !ok || !c.assumed[pod.UID] {
		return fmt.Errorf("forgetting pod %s/%s: not assumed: %w", pod.Namespace, pod.Name, ErrNotFound)
	}
	delete(c.assumed, pod.UID)
	return c.removePod(cur)
}

// IsAssumedPod reports whether pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assumed[pod.UID]
}

// Contains reports whether pod is counted, bound or assumed.
func (c *Cache) Contains(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[pod.UID]
	return ok
}

// AddPod counts a pod bound to a node, confirming it if it was assumed
// (moving it if it was bound elsewhere).
func (c *Cache) AddPod(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.pods[pod.UID]
	switch {
	case ok && c.assumed[pod.UID]:
		delete(c.assumed, pod.UID)
		if err := c.removePod(cur); err != nil {
			return err
		}
		c.addPod(pod)
	case ok:
		return fmt.Errorf("pod %s/%s was already added to the cache", pod.Namespace, pod.Name)
	default:
		c.addPod(pod)
	}
	return nil
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(_, pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.pods[pod.UID]
	if ok {
		delete(c.assumed, pod.UID)
		if err := c.removePod(cur); err != nil {
			return err
		}
	}
	c.addPod(pod)
	return nil
}

// RemovePod uncounts a pod, bound or assumed.
func (c *Cache) RemovePod(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.pods[pod.UID]
	if !ok {
		return fmt.Errorf("removing pod %s/%s: %w", pod.Namespace, pod.Name, ErrNotFound)
	}
	delete(c.assumed, pod.UID)
	return c.removePod(cur)
}

// Counts returns the number of nodes and of pods counted (bound and
// assumed) and of assumed pods.
func (c *Cache) Counts() (nodes, pods, assumed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tree.numNodes, len(c.pods), len(c.assumed)
}

// UpdateSnapshot brings s up to date, copying only the nodes changed since
// its last update.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rebuildAll, rebuildAffinity := false, false
	var order []string // the tree's order, computed once when needed
	if fresh := c.newSnapshotNodes(s); len(fresh) > 0 {
		order = c.tree.list()
		s.place(fresh, order)
		rebuildAll = true
	}
	for it := c.head; it != nil && it.info.Generation > s.generation; it = it.next {
		node := it.info.Node()
		if node == nil {
			continue
		}
		existing, ok := s.nodeInfoMap[node.Name]
		if !ok {
			rebuildAll = true
			existing = &NodeInfo{snapshot: s}
			s.nodeInfoMap[node.Name] = existing
		}
		info := it.info
		if (len(existing.PodsWithAffinity) > 0) != (len(info.PodsWithAffinity) > 0) ||
			(len(existing.PodsWithRequiredAntiAffinity) > 0) != (len(info.PodsWithRequiredAntiAffinity) > 0) {
			rebuildAffinity = true
		}
		if existing.Node() != nil && !labelsEqual(existing.Node().Labels, node.Labels) {
			s.nodeDomains = nil
		}
		oldNode, oldPods := existing.Node(), existing.Pods
		info.cloneInto(existing)
		if oldNode == existing.Node() {
			s.index.reaccount(existing, oldNode, oldPods, existing.Pods)
		} else {
			s.index.account(existing, oldNode, oldPods, -1)
			s.index.account(existing, existing.Node(), existing.Pods, 1)
		}
	}
	if c.head != nil {
		s.generation = c.head.info.Generation
	}
	if len(s.nodeInfoMap) > c.tree.numNodes {
		for name, ni := range s.nodeInfoMap {
			if it, ok := c.nodes[name]; !ok || it.info.Node() == nil {
				s.index.account(ni, ni.Node(), ni.Pods, -1)
				delete(s.nodeInfoMap, name)
			}
		}
		rebuildAll = true
	}
	if rebuildAll {
		s.nodeDomains = nil
	}
	if rebuildAll {
		if order == nil {
			order = c.tree.list()
		}
		s.nodeInfoList = s.nodeInfoList[:0]
		for _, name := range order {
			if ni, ok := s.nodeInfoMap[name]; ok {
				s.nodeInfoList = append(s.nodeInfoList, ni)
			}
		}
	}
	if rebuildAll || rebuildAffinity {
		s.rebuildAffinityLists()
	}
	if s.imageGeneration != c.imageGen {
		s.imageNodes = make(map[string]int, len(c.imageNodes))
		for k, v := range c.imageNodes {
			s.imageNodes[k] = v
		}
		s.imageGeneration = c.imageGen
	}
}

func labelsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
