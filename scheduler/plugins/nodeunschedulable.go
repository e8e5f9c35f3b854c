package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// NodeUnschedulableName is the plugin's name.
const NodeUnschedulableName = "NodeUnschedulable"

// Messages of NodeUnschedulable, as Kubernetes prints them.
const (
	ErrReasonUnschedulable = "node(s) were unschedulable"
	errReasonUnknownNode   = "node(s) had unknown conditions"
)

// NodeUnschedulable filters out cordoned nodes (spec.unschedulable) unless
// the pod tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
type NodeUnschedulable struct{}

var (
	_ scheduler.Filter            = (*NodeUnschedulable)(nil)
	_ scheduler.EnqueueExtensions = (*NodeUnschedulable)(nil)
)

// NewNodeUnschedulable returns the plugin.
func NewNodeUnschedulable() *NodeUnschedulable { return &NodeUnschedulable{} }

// Name returns NodeUnschedulableName.
func (*NodeUnschedulable) Name() string { return NodeUnschedulableName }

// EventsToRegister: a node added or uncordoned may fit.
func (*NodeUnschedulable) EventsToRegister() scheduler.ClusterEvent {
	return scheduler.NodeAdd | scheduler.NodeUpdate
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// Filter rejects a cordoned node.
func (*NodeUnschedulable) Filter(_ context.Context, _ *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) error {
	if n.Node() == nil {
		return errUnknownNode
	}
	if n.Unschedulable() && !tolerated(pod.Spec.Tolerations, &unschedulableTaint) {
		return errNodeUnschedulable
	}
	return nil
}
