package validation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRoles(t *testing.T) {
	v := Default()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "default"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	expectErrors(t, v.ValidateCreate(role))
	role.Rules = append(role.Rules, rbacv1.PolicyRule{Resources: []string{"pods"}}, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}})
	expectErrors(t, v.ValidateCreate(role),
		req("rules[1].verbs"), req("rules[1].apiGroups"),
		inv("rules[2].nonResourceURLs", "namespaced rules cannot apply to non-resource URLs"))

	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:metrics"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}}}}
	expectErrors(t, v.ValidateCreate(cr), inv("rules[1].nonResourceURLs", "both regular resources and non-resource URLs"))
	cr.Rules = nil
	cr.AggregationRule = &rbacv1.AggregationRule{}
	expectErrors(t, v.ValidateCreate(cr), req("aggregationRule.clusterRoleSelectors"))
}

func TestBindings(t *testing.T) {
	v := Default()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: "default"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "builder"}, {Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice@example.com"},
			{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}}
	expectErrors(t, v.ValidateCreate(rb))

	bad := rb.DeepCopy()
	bad.RoleRef = rbacv1.RoleRef{APIGroup: "example.com", Kind: "Policy"}
	bad.Subjects = []rbacv1.Subject{{Kind: "Robot", Name: "r"}, {Kind: "User", Name: "bob"}, {Kind: "ServiceAccount", APIGroup: "x", Name: "Bad_SA"}}
	expectErrors(t, v.ValidateCreate(bad), notSup("roleRef.apiGroup"), notSup("roleRef.kind"), req("roleRef.name"),
		notSup("subjects[0].kind"), notSup("subjects[1].apiGroup"), inv("subjects[2].name", ""), notSup("subjects[2].apiGroup"))

	old := rb.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	upd := old.DeepCopy()
	upd.RoleRef.Name = "writer"
	expectErrors(t, v.ValidateUpdate(upd, old), inv("roleRef", "cannot change roleRef"))
	upd = old.DeepCopy()
	upd.Subjects = upd.Subjects[:1]
	expectErrors(t, v.ValidateUpdate(upd, old))

	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admins"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ctl"}}}
	expectErrors(t, v.ValidateCreate(crb), notSup("roleRef.kind"), req("subjects[0].namespace"))
	oldCRB := crb.DeepCopy()
	oldCRB.ObjectMeta = storedMeta(oldCRB.ObjectMeta)
	oldCRB.RoleRef.Kind, oldCRB.Subjects[0].Namespace = "ClusterRole", "kube-system"
	updCRB := oldCRB.DeepCopy()
	updCRB.RoleRef.Name = "edit"
	expectErrors(t, v.ValidateUpdate(updCRB, oldCRB), inv("roleRef", "cannot change roleRef"))
}
