package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePolicyRule: verbs are required; a rule covers either resources
// (apiGroups and resources required) or non-resource URLs, never both, and
// namespaced rules cannot name URLs.
func validatePolicyRule(r rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

func validateRole(r *rbacv1.Role) field.ErrorList {
	errs := validateObjectMeta(&r.ObjectMeta, true, nameIsPathSegment, field.NewPath("metadata"))
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return errs
}

func validateRoleUpdate(r, old *rbacv1.Role) field.ErrorList {
	errs := validateRole(r)
	return append(errs, validateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := validateObjectMeta(&r.ObjectMeta, false, nameIsPathSegment, field.NewPath("metadata"))
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if r.AggregationRule != nil {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
		}
	}
	return errs
}

func validateClusterRoleUpdate(r, old *rbacv1.ClusterRole) field.ErrorList {
	errs := validateClusterRole(r)
	return append(errs, validateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

// validateRoleRef: the rbac group, a kind from kinds, a valid name.
func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	ok := false
	for _, k := range kinds {
		ok = ok || ref.Kind == k
	}
	if !ok {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateName(nameIsPathSegment, ref.Name, p.Child("name"))...)
	}
	return errs
}

// validateSubject: ServiceAccount (core group; namespace required in cluster
// bindings), User or Group (rbac group).
func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			errs = append(errs, validateName(nameIsDNSSubdomain, s.Name, p.Child("name"))...)
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func validateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	errs := validateObjectMeta(&b.ObjectMeta, true, nameIsPathSegment, field.NewPath("metadata"))
	errs = append(errs, validateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})...)
	for i, s := range b.Subjects {
		errs = append(errs, validateSubject(s, true, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// validateRoleBindingUpdate: roleRef cannot change.
func validateRoleBindingUpdate(b, old *rbacv1.RoleBinding) field.ErrorList {
	errs := validateRoleBinding(b)
	errs = append(errs, validateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if b.RoleRef != old.RoleRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), b.RoleRef, "cannot change roleRef"))
	}
	return errs
}

func validateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := validateObjectMeta(&b.ObjectMeta, false, nameIsPathSegment, field.NewPath("metadata"))
	errs = append(errs, validateRoleRef(b.RoleRef, []string{"ClusterRole"})...)
	for i, s := range b.Subjects {
		errs = append(errs, validateSubject(s, false, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateClusterRoleBindingUpdate(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := validateClusterRoleBinding(b)
	errs = append(errs, validateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if b.RoleRef != old.RoleRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), b.RoleRef, "cannot change roleRef"))
	}
	return errs
}
