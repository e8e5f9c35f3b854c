package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// NodePortsName is the plugin's name.
const NodePortsName = "NodePorts"

// ErrReasonNodePorts is NodePorts' rejection.
const ErrReasonNodePorts = "node(s) didn't have free ports for the requested pod ports"

// NodePorts filters out nodes where a host port the pod asks for is taken
// (same protocol and port, same IP or either on 0.0.0.0).
type NodePorts struct{}

var (
	_ scheduler.PreFilter         = (*NodePorts)(nil)
	_ scheduler.Filter            = (*NodePorts)(nil)
	_ scheduler.EnqueueExtensions = (*NodePorts)(nil)
)

// NewNodePorts returns the plugin.
func NewNodePorts() *NodePorts { return &NodePorts{} }

// Name returns NodePortsName.
func (*NodePorts) Name() string { return NodePortsName }

// EventsToRegister: a deleted pod frees ports, a new node has all free.
func (*NodePorts) EventsToRegister() scheduler.ClusterEvent {
	return scheduler.NodeAdd | scheduler.PodDelete
}

const nodePortsStateKey = "PreFilter" + NodePortsName

type wantedPorts []scheduler.HostPort

// PreFilter collects the pod's host ports, skipping Filter when none.
func (*NodePorts) PreFilter(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod) error {
	var ports wantedPorts
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, scheduler.NewHostPort(p))
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	if len(ports) == 0 {
		return scheduler.ErrSkip
	}
	s.Write(nodePortsStateKey, ports)
	return nil
}

// Filter rejects a node where one of the ports is in use.
func (*NodePorts) Filter(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) error {
	ports, err := scheduler.ReadAs[wantedPorts](s, nodePortsStateKey)
	if err != nil {
		return err
	}
	for _, p := range ports {
		if n.UsedPorts.Conflicts(p) {
			return errNodePorts
		}
	}
	return nil
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
