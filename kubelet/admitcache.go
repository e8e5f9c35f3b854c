package kubelet

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/scheduler"
)

// podInfoCache keeps the scheduler.PodInfo (requests, affinity terms,
// host ports) of the pods admitted on the node, so admitting a pod costs
// one PodInfo instead of one per pod already on the node: a node
// admitting its hundredth pod would otherwise recompute ninety-nine. An
// entry is reused only for the very pod object it was computed from (pod
// objects are never modified in place; an update is a new object), and
// entries of pods no longer active are dropped on the next admission.
type podInfoCache struct {
	mu    sync.Mutex
	infos map[types.UID]*scheduler.PodInfo
}

// nodeInfo returns a NodeInfo of node with pods on it.
func (c *podInfoCache) nodeInfo(node *corev1.Node, pods []*corev1.Pod) *scheduler.NodeInfo {
	ni := scheduler.NewNodeInfo(node)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.infos == nil {
		c.infos = make(map[types.UID]*scheduler.PodInfo, len(pods))
	}
	live := make(map[types.UID]struct{}, len(pods))
	for _, p := range pods {
		pi := c.infos[p.UID]
		if pi == nil || pi.Pod != p {
			pi = scheduler.NewPodInfo(p)
			c.infos[p.UID] = pi
		}
		live[p.UID] = struct{}{}
		ni.AddPodInfo(pi)
	}
	for uid := range c.infos {
		if _, ok := live[uid]; !ok {
			delete(c.infos, uid)
		}
	}
	return ni
}
