package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// NodeNameName is the plugin's name.
const NodeNameName = "NodeName"

// ErrReasonNodeName is NodeName's rejection.
const ErrReasonNodeName = "node(s) didn't match the requested node name"

// NodeName filters out every node but the one a pod names in
// spec.nodeName (a pod that already names a node is normally not queued;
// this keeps the scheduler honest for pods that are).
type NodeName struct{}

var (
	_ scheduler.Filter            = (*NodeName)(nil)
	_ scheduler.EnqueueExtensions = (*NodeName)(nil)
)

// NewNodeName returns the plugin.
func NewNodeName() *NodeName { return &NodeName{} }

// Name returns NodeNameName.
func (*NodeName) Name() string { return NodeNameName }

// EventsToRegister: only a new node can be the named one.
func (*NodeName) EventsToRegister() scheduler.ClusterEvent { return scheduler.NodeAdd }

// Filter rejects nodes other than spec.nodeName.
func (*NodeName) Filter(_ context.Context, _ *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) error {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != n.Name() {
		return errNodeName
	}
	return nil
}
