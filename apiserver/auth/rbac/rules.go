package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/podkit/podkit/apiserver/auth"
)

// serviceAccountPrefix starts the user name of every service account:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// RuleAllows reports whether rule grants the request a, with Kubernetes'
// matching: "*" matches any verb, group, resource or URL; a resource rule
// "pods/status" matches that subresource only, "*/status" every status
// subresource; resourceNames, when set, restrict the rule to those names;
// a non-resource URL rule ending in "*" matches by prefix.
func RuleAllows(a auth.Attributes, rule *rbacv1.PolicyRule) bool {
	if a.ResourceRequest {
		combined := a.Resource
		if a.Subresource != "" {
			combined += "/" + a.Subresource
		}
		return verbMatches(rule, a.Verb) &&
			groupMatches(rule, a.APIGroup) &&
			resourceMatches(rule, combined, a.Subresource) &&
			nameMatches(rule, a.Name)
	}
	return verbMatches(rule, a.Verb) && urlMatches(rule, a.Path)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func groupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && r[2:] == subresource:
			return true
		}
	}
	return false
}

func nameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

func urlMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}

// appliesTo reports whether subject s names u; namespace is the binding's,
// the default namespace of a ServiceAccount subject.
func appliesTo(u auth.User, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		for _, g := range u.GetGroups() {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		return ns != "" && u.GetName() == serviceAccountPrefix+ns+":"+s.Name
	}
	return false
}

// subjectKeys are the index keys a binding's subject is filed under: the
// user name it matches (service accounts by their full user name) or the
// group.
func subjectKey(s *rbacv1.Subject, namespace string) (string, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return "u:" + s.Name, true
	case rbacv1.GroupKind:
		return "g:" + s.Name, true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		if ns == "" {
			return "", false
		}
		return "u:" + serviceAccountPrefix + ns + ":" + s.Name, true
	}
	return "", false
}

// userKeys are the index keys under which bindings naming u are filed.
func userKeys(u auth.User) []string {
	keys := make([]string, 0, 1+len(u.GetGroups()))
	keys = append(keys, "u:"+u.GetName())
	for _, g := range u.GetGroups() {
		keys = append(keys, "g:"+g)
	}
	return keys
}
