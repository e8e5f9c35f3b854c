package nodelifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Condition reasons and messages the controller writes (Kubernetes').
const (
	ReasonNodeStatusUnknown      = "NodeStatusUnknown"
	MessageNodeStatusUnknown     = "Kubelet stopped posting node status."
	ReasonNodeStatusNeverUpdated = "NodeStatusNeverUpdated"
	MessageNodeNeverUpdated      = "Kubelet never posted node status."
)

// kubeletConditions are the conditions the kubelet owns and that become
// Unknown when it stops reporting.
var kubeletConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// nodeHealth is what the controller last saw of a node, with times by its
// own clock.
type nodeHealth struct {
	probe          time.Time // last sign of life
	readyHeartbeat *metav1.Time
	readyTransit   metav1.Time
	leaseRenew     *metav1.MicroTime
	podsMarked     bool // pods marked not ready for the current lost spell
}

// monitorNodeHealth runs one health pass over every node.
func (c *Controller) monitorNodeHealth(ctx context.Context) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		c.log.Warn("listing nodes", "err", err)
		return
	}
	for _, n := range nodes {
		if ctx.Err() != nil {
			return
		}
		if err := c.checkNode(ctx, n.DeepCopy()); err != nil {
			c.log.Warn("checking node health", "node", n.Name, "err", err)
		}
	}
}

// checkNode updates one node's health and, when its kubelet is lost
// (Ready Unknown), marks its pods not ready once per lost spell: on the
// transition, when a restarted controller first sees the node lost, and
// again after a failed attempt. A kubelet that itself reports Ready False
// is alive and keeps its pods' readiness itself.
func (c *Controller) checkNode(ctx context.Context, node *corev1.Node) error {
	observed, current, err := c.tryUpdateNodeHealth(ctx, node)
	if err != nil {
		return err
	}
	ready := current != nil && current.Status == corev1.ConditionTrue
	lost := current != nil && current.Status == corev1.ConditionUnknown
	wasReady := observed.Status == corev1.ConditionTrue
	if ready && !wasReady {
		c.recordNodeEvent(node, corev1.EventTypeNormal, "NodeReady")
	}
	if !ready && wasReady {
		c.recordNodeEvent(node, corev1.EventTypeNormal, "NodeNotReady")
	}
	c.mu.Lock()
	h := c.health[node.Name]
	if !lost {
		h.podsMarked = false
		delete(c.podsPending, node.Name)
	}
	todo := lost && (!h.podsMarked || c.podsPending[node.Name])
	h.podsMarked = h.podsMarked || todo
	c.mu.Unlock()
	if !todo {
		return nil
	}
	err = c.markPodsNotReady(ctx, node.Name)
	c.mu.Lock()
	if err != nil {
		c.podsPending[node.Name] = true
	} else {
		delete(c.podsPending, node.Name)
	}
	c.mu.Unlock()
	return err
}

// tryUpdateNodeHealth records the node's signs of life and, when there
// were none for the grace period, writes its kubelet conditions Unknown. It
// returns the Ready condition as observed and as it is now.
func (c *Controller) tryUpdateNodeHealth(ctx context.Context, node *corev1.Node) (observed corev1.NodeCondition, current *corev1.NodeCondition, err error) {
	now := c.clock.Now()
	c.mu.Lock()
	h := c.health[node.Name]
	cur := condition(node, corev1.NodeReady)
	grace := c.opts.grace
	switch {
	case cur == nil:
		// Never posted: a fake condition dated at the node's creation,
		// with the startup grace.
		observed = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: node.CreationTimestamp}
		grace = c.opts.startupGrace
		if h == nil {
			h = &nodeHealth{probe: node.CreationTimestamp.Time, readyTransit: node.CreationTimestamp}
		}
		h.readyHeartbeat = nil
	case h == nil || h.readyHeartbeat == nil:
		// First seen with a Ready condition (or the condition appeared).
		observed = *cur
		marked := false
		if h != nil {
			marked = h.podsMarked
		}
		h = &nodeHealth{probe: now, readyTransit: metav1.NewTime(now), readyHeartbeat: cur.LastHeartbeatTime.DeepCopy(), podsMarked: marked}
	default:
		observed = *cur
		if !h.readyHeartbeat.Equal(&cur.LastHeartbeatTime) {
			h.probe = now
			h.readyHeartbeat = cur.LastHeartbeatTime.DeepCopy()
			if !h.readyTransit.Equal(&cur.LastTransitionTime) {
				h.readyTransit = metav1.NewTime(now)
			}
		}
	}
	if lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil && lease.Spec.RenewTime != nil {
		if h.leaseRenew == nil || h.leaseRenew.Before(lease.Spec.RenewTime) {
			h.leaseRenew = lease.Spec.RenewTime.DeepCopy()
			h.probe = now
		}
	}
	c.health[node.Name] = h
	expired := now.After(h.probe.Add(grace))
	c.mu.Unlock()

	if !expired {
		return observed, cur, nil
	}
	stamp := metav1.NewTime(now)
	for _, t := range kubeletConditions {
		cond := condition(node, t)
		switch {
		case cond == nil:
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown,
				Reason: ReasonNodeStatusNeverUpdated, Message: MessageNodeNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: stamp,
			})
		case cond.Status != corev1.ConditionUnknown:
			cond.Status = corev1.ConditionUnknown
			cond.Reason, cond.Message = ReasonNodeStatusUnknown, MessageNodeStatusUnknown
			cond.LastTransitionTime = stamp
		}
	}
	current = condition(node, corev1.NodeReady)
	if equality.Semantic.DeepEqual(current, &observed) {
		return observed, current, nil
	}
	c.log.Info("node stopped reporting, marking its conditions unknown", "node", node.Name,
		"silentFor", now.Sub(h.probe).String())
	updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return observed, current, nil
	}
	if err != nil {
		// Conflicts included: the next pass looks again.
		return observed, cur, fmt.Errorf("updating status of node %s: %w", node.Name, err)
	}
	c.mu.Lock()
	h.readyTransit = stamp
	if rc := condition(updated, corev1.NodeReady); rc != nil {
		h.readyHeartbeat = rc.LastHeartbeatTime.DeepCopy()
	}
	c.mu.Unlock()
	return observed, condition(updated, corev1.NodeReady), nil
}

// LastProbe returns the last sign of life the controller recorded for a
// node, by its clock, and whether it has seen the node at all.
func (c *Controller) LastProbe(node string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.health[node]
	if !ok {
		return time.Time{}, false
	}
	return h.probe, true
}

func condition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// recordNodeEvent records "Node <name> status is now: <status>" like
// Kubernetes' RecordNodeStatusChange.
func (c *Controller) recordNodeEvent(node *corev1.Node, typ, status string) {
	ref := &corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
	c.recorder.Eventf(ref, typ, status, "Node %s status is now: %s", node.Name, status)
}
