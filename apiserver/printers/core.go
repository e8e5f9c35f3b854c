package printers

import (
	"fmt"
	"sort"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// namespaceCells computes NAME, STATUS, AGE of a namespace.
func namespaceCells(c *cellContext, ns *corev1.Namespace) []any {
	return []any{ns.Name, string(ns.Status.Phase), c.since(ns.CreationTimestamp)}
}

// configMapCells computes NAME, DATA (keys of data and binaryData), AGE.
func configMapCells(c *cellContext, cm *corev1.ConfigMap) []any {
	return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), c.since(cm.CreationTimestamp)}
}

// secretCells computes NAME, TYPE, DATA, AGE of a secret.
func secretCells(c *cellContext, s *corev1.Secret) []any {
	return []any{s.Name, string(s.Type), int64(len(s.Data)), c.since(s.CreationTimestamp)}
}

// serviceAccountCells computes NAME, AGE. Kubernetes dropped the SECRETS
// column once token secrets stopped being generated.
func serviceAccountCells(c *cellContext, sa *corev1.ServiceAccount) []any {
	return []any{sa.Name, c.since(sa.CreationTimestamp)}
}

// resourceQuotaCells computes NAME, REQUEST, LIMIT, AGE: every hard limit as
// "resource: used/hard", sorted by resource name, "limits.*" ones in LIMIT.
func resourceQuotaCells(c *cellContext, q *corev1.ResourceQuota) []any {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var request, limit []string
	for _, name := range names {
		used := q.Status.Used[corev1.ResourceName(name)]
		hard := q.Status.Hard[corev1.ResourceName(name)]
		entry := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if pieces := strings.Split(name, "."); len(pieces) > 1 && pieces[0] == "limits" {
			limit = append(limit, entry)
		} else {
			request = append(request, entry)
		}
	}
	return []any{q.Name, strings.Join(request, ", "), strings.Join(limit, ", "), c.since(q.CreationTimestamp)}
}

// leaseCells computes NAME, HOLDER, AGE of a lease.
func leaseCells(c *cellContext, l *coordinationv1.Lease) []any {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []any{l.Name, holder, c.since(l.CreationTimestamp)}
}

// priorityClassCells computes NAME, VALUE, GLOBAL-DEFAULT, AGE,
// PREEMPTIONPOLICY.
func priorityClassCells(c *cellContext, pc *schedulingv1.PriorityClass) []any {
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, c.since(pc.CreationTimestamp), policy}
}

// podDisruptionBudgetCells computes NAME, MIN AVAILABLE, MAX UNAVAILABLE,
// ALLOWED DISRUPTIONS, AGE.
func podDisruptionBudgetCells(c *cellContext, pdb *policyv1.PodDisruptionBudget) []any {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if pdb.Spec.MinAvailable != nil {
		minAvailable = pdb.Spec.MinAvailable.String()
	}
	if pdb.Spec.MaxUnavailable != nil {
		maxUnavailable = pdb.Spec.MaxUnavailable.String()
	}
	return []any{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), c.since(pdb.CreationTimestamp)}
}
