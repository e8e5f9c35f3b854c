// Package nodelifecycle is the node lifecycle controller of the controller
// manager: it notices nodes whose kubelet stopped reporting and makes the
// rest of the cluster act on it.
//
// Health. A kubelet proves it is alive by renewing its Lease in the
// kube-node-lease namespace (every 10 s) and by posting node status. Every
// monitor period the controller looks at each node: a renewed lease (a
// later renewTime than last seen) or a new Ready heartbeat moves the
// node's probe time to now, by the controller's clock — never trusting the
// node's clock. When the probe time is older than the grace period (40 s by
// default; a node that never posted status gets the startup grace period,
// counted from its creation), the kubelet-owned conditions Ready,
// MemoryPressure, DiskPressure and PIDPressure become Unknown with reason
// NodeStatusUnknown, "Kubelet stopped posting node status."
// (NodeStatusNeverUpdated, "Kubelet never posted node status.", for
// conditions never posted). NetworkUnavailable is left alone, as in
// Kubernetes. The controller never sets Ready back to True: the kubelet
// does, when it reports again.
//
// Pods. When a node is lost (Ready Unknown), the Ready condition of every
// pod bound to it is set to False through the status subresource (so
// Services stop sending them traffic) with a NodeNotReady event; a
// restarted controller does the same for nodes it first sees lost. A
// kubelet that reports Ready False itself is alive and keeps its pods'
// readiness itself.
//
// Taints. Level-triggered on node changes, the controller keeps the
// condition taints in line with the node's conditions, as Kubernetes'
// TaintNodesByCondition and taint-based eviction do:
//   - Ready False → node.kubernetes.io/not-ready, NoSchedule and NoExecute;
//   - Ready Unknown → node.kubernetes.io/unreachable, NoSchedule and
//     NoExecute;
//   - MemoryPressure, DiskPressure, PIDPressure True and
//     NetworkUnavailable True → their NoSchedule taints; spec.unschedulable
//     → node.kubernetes.io/unschedulable:NoSchedule.
//
// NoExecute taints carry timeAdded, from which the taint eviction
// controller (sub-package tainteviction) evicts the node's pods after
// their tolerationSeconds (the DefaultTolerationSeconds admission plugin
// gives every pod 300 s), so their ReplicaSets replace them elsewhere.
// When Ready is True again all of them are removed. The NoSchedule
// variants keep new pods off the node even though pods tolerate the
// NoExecute ones for a while.
//
// Sub-package ipam assigns nodes their PodCIDRs.
//
// Differences from Kubernetes: evictions are not rate-limited per zone, and
// there is no "full disruption" mode that stops evictions when every node of a
// zone is unhealthy, and pod phase changes (Kubernetes stopped marking pods
// Unknown too; `kubectl get pods` derives that from the node).
package nodelifecycle
