// Package tainteviction is the taint eviction controller of the controller
// manager: it deletes the pods of a node with NoExecute taints they do not
// tolerate, at once, or after the tolerationSeconds of their tolerations.
//
// With the node lifecycle controller this is what moves workloads off a
// lost node: the node gets node.kubernetes.io/unreachable:NoExecute, every
// pod has (from the DefaultTolerationSeconds admission plugin) a
// toleration for it limited to 300 s, and when that runs out the pod is
// deleted, so its ReplicaSet creates a replacement that the scheduler puts
// on another node. A toleration without tolerationSeconds tolerates the
// taint forever.
//
// Each pod's eviction time is computed from the node's taints: for every
// NoExecute taint the deadline of the pod's first toleration that matches
// it (as in Kubernetes), counted from the taint's timeAdded (set by whoever added it;
// when missing, from the moment this controller first saw the taint), and
// the pod goes at the earliest of those. Unlike Kubernetes, which starts a
// timer when it first sees the taint, counting from timeAdded means a
// restarted controller does not give pods extra time. The computation is
// level-triggered and idempotent: pods are re-examined when they or their
// node change, and queued again for their eviction time (at most a recheck
// interval ahead, so a stepped test clock is noticed promptly). Before
// deleting, the pod gets the DisruptionTarget condition (reason
// DeletionByTaintManager) and a TaintManagerEviction event; the delete
// carries the pod's UID as precondition.
package tainteviction
