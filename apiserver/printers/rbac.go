package printers

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// roleBindingCells computes NAME, ROLE, AGE, USERS, GROUPS, SERVICEACCOUNTS.
func roleBindingCells(c *cellContext, b *rbacv1.RoleBinding) []any {
	return bindingCells(b.Name, b.RoleRef, b.Subjects, c.since(b.CreationTimestamp))
}

// clusterRoleBindingCells computes NAME, ROLE, AGE, USERS, GROUPS,
// SERVICEACCOUNTS.
func clusterRoleBindingCells(c *cellContext, b *rbacv1.ClusterRoleBinding) []any {
	return bindingCells(b.Name, b.RoleRef, b.Subjects, c.since(b.CreationTimestamp))
}

func bindingCells(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, age string) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sas = append(sas, fmt.Sprintf("%s/%s", s.Namespace, s.Name))
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return []any{
		name,
		fmt.Sprintf("%s/%s", ref.Kind, ref.Name),
		age,
		strings.Join(users, ", "),
		strings.Join(groups, ", "),
		strings.Join(sas, ", "),
	}
}
