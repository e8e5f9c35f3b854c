package rbac

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/podkit/podkit/apiserver/auth"
)

func TestRuleAllows(t *testing.T) {
	res := func(verb, group, resource, sub, name string) auth.Attributes {
		return auth.Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
	}
	path := func(verb, p string) auth.Attributes { return auth.Attributes{Verb: verb, Path: p} }
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs auth.Attributes
		want  bool
	}{
		{"exact", rule("get").groups("").resources("pods").build(), res("get", "", "pods", "", "x"), true},
		{"other verb", rule("get").groups("").resources("pods").build(), res("list", "", "pods", "", ""), false},
		{"star verb", rule("*").groups("").resources("pods").build(), res("deletecollection", "", "pods", "", ""), true},
		{"other group", rule("get").groups("").resources("pods").build(), res("get", "apps", "pods", "", ""), false},
		{"star group", rule("get").groups("*").resources("pods").build(), res("get", "apps", "pods", "", ""), true},
		{"main rule does not cover subresource", rule("get").groups("").resources("pods").build(), res("get", "", "pods", "log", "x"), false},
		{"subresource rule", rule("get").groups("").resources("pods/log").build(), res("get", "", "pods", "log", "x"), true},
		{"subresource rule not main", rule("get").groups("").resources("pods/log").build(), res("get", "", "pods", "", "x"), false},
		{"star resource covers subresources", rule("get").groups("").resources("*").build(), res("get", "", "pods", "status", "x"), true},
		{"star slash sub", rule("update").groups("").resources("*/status").build(), res("update", "", "nodes", "status", "n"), true},
		{"star slash sub other", rule("update").groups("").resources("*/status").build(), res("update", "", "nodes", "scale", "n"), false},
		{"resource names match", rule("get").groups("").resources("configmaps").names("a", "b").build(), res("get", "", "configmaps", "", "b"), true},
		{"resource names miss", rule("get").groups("").resources("configmaps").names("a").build(), res("get", "", "configmaps", "", "c"), false},
		{"resource names and list", rule("list").groups("").resources("configmaps").names("a").build(), res("list", "", "configmaps", "", ""), false},
		{"url exact", rule("get").urls("/healthz").build(), path("get", "/healthz"), true},
		{"url prefix", rule("get").urls("/apis/*").build(), path("get", "/apis/apps/v1"), true},
		{"url prefix miss", rule("get").urls("/apis/*").build(), path("get", "/api"), false},
		{"url star", rule("*").urls("*").build(), path("post", "/anything"), true},
		{"url rule is not a resource rule", rule("get").urls("*").build(), res("get", "", "pods", "", ""), false},
		{"resource rule is not a url rule", rule("get").groups("*").resources("*").build(), path("get", "/healthz"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rule
			assert.Equal(t, tt.want, RuleAllows(tt.attrs, &r))
		})
	}
}

func TestAppliesTo(t *testing.T) {
	jane := &auth.DefaultUser{Name: "jane", Groups: []string{"devs", auth.GroupAuthenticated}}
	sa := &auth.DefaultUser{Name: "system:serviceaccount:apps:builder", Groups: []string{"system:serviceaccounts"}}
	tests := []struct {
		name    string
		user    auth.User
		subject rbacv1.Subject
		ns      string
		want    bool
	}{
		{"user", jane, user("jane"), "", true},
		{"other user", jane, user("bob"), "", false},
		{"group", jane, group("devs"), "", true},
		{"other group", jane, group("ops"), "", false},
		{"service account", sa, serviceAccount("apps", "builder"), "", true},
		{"service account namespace defaults to the binding's", sa, rbacv1.Subject{Kind: "ServiceAccount", Name: "builder"}, "apps", true},
		{"service account other namespace", sa, serviceAccount("web", "builder"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, appliesTo(tt.user, &tt.subject, tt.ns))
			k, ok := subjectKey(&tt.subject, tt.ns)
			assert.True(t, ok)
			assert.Equal(t, tt.want, contains(userKeys(tt.user), k), "index key %s", k)
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
