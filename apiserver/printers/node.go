package printers

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	// labelNodeRolePrefix marks a node role: node-role.kubernetes.io/<role>.
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	// labelNodeRole is the older kubernetes.io/role=<role> label.
	labelNodeRole = "kubernetes.io/role"
)

// nodeCells computes NAME, STATUS, ROLES, AGE, VERSION, INTERNAL-IP,
// EXTERNAL-IP, OS-IMAGE, KERNEL-VERSION, CONTAINER-RUNTIME of a node.
func nodeCells(c *cellContext, n *corev1.Node) []any {
	info := n.Status.NodeInfo
	return []any{
		n.Name,
		nodeStatus(n),
		orPlaceholder(strings.Join(nodeRoles(n), ","), none),
		c.since(n.CreationTimestamp),
		info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP),
		nodeAddress(n, corev1.NodeExternalIP),
		orPlaceholder(info.OSImage, unknown),
		orPlaceholder(info.KernelVersion, unknown),
		orPlaceholder(info.ContainerRuntimeVersion, unknown),
	}
}

// nodeStatus is "Ready", "NotReady" or "Unknown" (no Ready condition),
// followed by ",SchedulingDisabled" for a cordoned node.
func nodeStatus(n *corev1.Node) string {
	status := "Unknown"
	// The last Ready condition wins, as when Kubernetes indexes them by type.
	for _, cond := range n.Status.Conditions {
		if cond.Type != corev1.NodeReady {
			continue
		}
		if cond.Status == corev1.ConditionTrue {
			status = string(corev1.NodeReady)
		} else {
			status = "Not" + string(corev1.NodeReady)
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles returns the sorted, distinct roles of a node, from
// node-role.kubernetes.io/<role> labels and the kubernetes.io/role label.
func nodeRoles(n *corev1.Node) []string {
	seen := map[string]bool{}
	var roles []string
	for k, v := range n.Labels {
		role := ""
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			role = strings.TrimPrefix(k, labelNodeRolePrefix)
		case k == labelNodeRole:
			role = v
		}
		if role != "" && !seen[role] {
			seen[role] = true
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	return roles
}

// nodeAddress returns the first address of the given type, or "<none>".
func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return none
}
