package kubelet

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// admittedPods is admission's accounting of the node: a scheduler.NodeInfo
// of the pods admitted and not terminated, kept as they come and go
// instead of rebuilt for every admission. Admitting a pod used to cost a
// NodeInfo of every pod on the node (a node admitting its hundredth pod
// recomputed ninety-nine); now it costs the changes since the previous
// admission.
//
// The pod workers report, whenever a pod's worker changes what counts
// (admitted, terminated, removed from its source, or a new object of the
// pod), which object of the pod counts now (set); the NodeInfo catches up
// at the next admission (nodeInfoLocked). Status echoes are not reported:
// they differ from the counted object only in status, which admission
// does not look at. It counts exactly the pods the kubelet's pod manager
// would list as active, as a NodeInfo rebuilt from scratch over their
// latest objects would.
type admittedPods struct {
	mu sync.Mutex
	// want is the object of each pod that counts now.
	want map[types.UID]*corev1.Pod
	// dirty are the pods whose want changed since the last refresh.
	dirty map[types.UID]struct{}
	// counted are the PodInfos in ni, by pod.
	counted map[types.UID]*scheduler.PodInfo
	ni      *scheduler.NodeInfo
	// node is the Node object ni was last given.
	node *corev1.Node

	// The scheduler plugins admission runs, built once.
	fit      *plugins.Fit
	affinity *plugins.NodeAffinity
	ports    *plugins.NodePorts
}

// set records that pod (nil: nothing) is what of uid counts against the
// node now. Workers call it with their lock held, so the last call for a
// pod is its latest state.
func (a *admittedPods) set(uid types.UID, pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, ok := a.want[uid]
	switch {
	case pod == nil && !ok, pod != nil && cur == pod:
		return
	case pod == nil:
		delete(a.want, uid)
	default:
		if a.want == nil {
			a.want = map[types.UID]*corev1.Pod{}
		}
		a.want[uid] = pod
	}
	if a.dirty == nil {
		a.dirty = map[types.UID]struct{}{}
	}
	a.dirty[uid] = struct{}{}
}

// nodeInfo brings the NodeInfo up to date with the recorded changes and
// node (nil before the Node exists), whose pod capacity is the smaller of
// its allocatable pods and maxPods, and returns it without the pod except
// (the one being admitted, should it count already). The caller holds
// a.mu and must not keep the result past it.
func (a *admittedPods) nodeInfoLocked(node *corev1.Node, maxPods int, except types.UID) *scheduler.NodeInfo {
	if a.ni == nil {
		a.ni = &scheduler.NodeInfo{}
		a.counted = map[types.UID]*scheduler.PodInfo{}
	}
	for uid := range a.dirty {
		want := a.want[uid]
		if pi := a.counted[uid]; pi != nil && pi.Pod != want {
			_ = a.ni.RemovePod(pi.Pod) // counted, so present
			delete(a.counted, uid)
		}
		if want != nil && a.counted[uid] == nil {
			pi := scheduler.NewPodInfo(want)
			a.ni.AddPodInfo(pi)
			a.counted[uid] = pi
		}
	}
	clear(a.dirty)
	if node != nil && node != a.node {
		// The informer's object is shared and never modified: the
		// capacity override goes into the NodeInfo, not the Node.
		a.node = node
		a.ni.SetNode(node)
		pods := int64(maxPods)
		if q, ok := node.Status.Allocatable[corev1.ResourcePods]; ok && q.Value() < pods {
			pods = q.Value()
		}
		a.ni.Allocatable.AllowedPodNumber = pods
	}
	if pi := a.counted[except]; pi != nil {
		ni := a.ni.Clone()
		_ = ni.RemovePod(pi.Pod)
		return ni
	}
	return a.ni
}

// plugins returns the admission plugins, built on first use.
func (a *admittedPods) pluginsLocked() (*plugins.Fit, *plugins.NodeAffinity, *plugins.NodePorts, error) {
	if a.fit == nil {
		fit, err := plugins.NewFit(plugins.FitArgs{})
		if err != nil {
			return nil, nil, nil, err
		}
		na, err := plugins.NewNodeAffinity(plugins.NodeAffinityArgs{})
		if err != nil {
			return nil, nil, nil, err
		}
		a.fit, a.affinity, a.ports = fit, na, plugins.NewNodePorts()
	}
	return a.fit, a.affinity, a.ports, nil
}

// filterPorts runs the NodePorts plugin: a pod without host ports passes.
func filterPorts(np *plugins.NodePorts, pod *corev1.Pod, ni *scheduler.NodeInfo) bool {
	ctx := context.Background()
	cs := scheduler.NewCycleState(nil)
	return np.PreFilter(ctx, cs, pod) != nil || np.Filter(ctx, cs, pod, ni) == nil
}
