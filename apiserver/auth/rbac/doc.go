// Package rbac is the RBAC authorizer of step 2 of the birth sequence:
// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings read from the
// API server's own store, kept in an index updated by watching (so an
// authorization decision is a few map lookups, never a store read), with
// Kubernetes' rule semantics.
//
// The package also owns what kube-apiserver's RBAC post-start hook and
// the ClusterRole aggregation controller do: the bootstrap policy (the
// default ClusterRoles such as cluster-admin, admin, edit, view,
// system:node, system:kube-scheduler, and their bindings) is reconciled
// into the store when the authorizer starts — missing objects created,
// missing rules and subjects added unless the object opts out with
// rbac.authorization.kubernetes.io/autoupdate=false — and ClusterRoles
// with an aggregationRule get the union of the rules of the ClusterRoles
// their selectors match, rewritten whenever one of those changes.
//
// podkit runs its controllers under the one identity
// system:kube-controller-manager (there is no per-controller service
// account), so that role here carries the rules of every controller podkit
// ships, not only the bootstrap rules of kube-controller-manager.
package rbac
