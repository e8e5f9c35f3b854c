package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResourceQuota: standard (or qualified) resource names with
// non-negative quantities, and scopes that fit the hard limits.
func validateResourceQuota(rq *corev1.ResourceQuota) field.ErrorList {
	errs := validateObjectMeta(&rq.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateQuotaSpec(&rq.Spec, field.NewPath("spec"))...)
	return append(errs, validateQuotaStatus(&rq.Status, field.NewPath("status"))...)
}

func validateQuotaList(list corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedResourceNames(list) {
		errs = append(errs, validateQuotaResourceName(k, p.Key(string(k)))...)
		errs = append(errs, validateResourceQuantity(k, list[k], p.Key(string(k)))...)
	}
	return errs
}

func validateQuotaSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	errs := validateQuotaList(spec.Hard, fldPath.Child("hard"))
	hard := sortedResourceNames(spec.Hard)
	scopes := map[corev1.ResourceQuotaScope]bool{}
	scopesPath := fldPath.Child("scopes")
	for _, s := range spec.Scopes {
		if !isStandardQuotaScope(s) {
			errs = append(errs, field.Invalid(scopesPath, spec.Scopes, "unsupported scope"))
		}
		for _, k := range hard {
			if isStandardQuotaResourceName(k) && !quotaScopeAllows(s, k) {
				errs = append(errs, field.Invalid(scopesPath, spec.Scopes, "unsupported scope applied to resource"))
			}
		}
		scopes[s] = true
	}
	errs = append(errs, conflictingScopes(scopes, scopesPath, spec.Scopes)...)
	if spec.ScopeSelector == nil {
		return errs
	}
	mePath := fldPath.Child("scopeSelector", "matchExpressions")
	selScopes := map[corev1.ResourceQuotaScope]bool{}
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !isStandardQuotaScope(req.ScopeName) {
			errs = append(errs, field.Invalid(mePath.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, k := range hard {
			if isStandardQuotaResourceName(k) && !quotaScopeAllows(req.ScopeName, k) {
				errs = append(errs, field.Invalid(mePath, spec.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(mePath.Child("operator"), req.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(mePath.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(mePath.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(mePath.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		selScopes[req.ScopeName] = true
	}
	return append(errs, conflictingScopes(selScopes, mePath, spec.Scopes)...)
}

func conflictingScopes(scopes map[corev1.ResourceQuotaScope]bool, p *field.Path, bad []corev1.ResourceQuotaScope) field.ErrorList {
	if (scopes[corev1.ResourceQuotaScopeBestEffort] && scopes[corev1.ResourceQuotaScopeNotBestEffort]) ||
		(scopes[corev1.ResourceQuotaScopeTerminating] && scopes[corev1.ResourceQuotaScopeNotTerminating]) {
		return field.ErrorList{field.Invalid(p, bad, "conflicting scopes")}
	}
	return nil
}

func validateQuotaStatus(st *corev1.ResourceQuotaStatus, fldPath *field.Path) field.ErrorList {
	errs := validateQuotaList(st.Hard, fldPath.Child("hard"))
	return append(errs, validateQuotaList(st.Used, fldPath.Child("used"))...)
}

// validateResourceQuotaUpdate: scopes are immutable.
func validateResourceQuotaUpdate(rq, old *corev1.ResourceQuota) field.ErrorList {
	errs := validateObjectMetaUpdate(&rq.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateQuotaSpec(&rq.Spec, field.NewPath("spec"))...)
	oldScopes, newScopes := map[corev1.ResourceQuotaScope]bool{}, map[corev1.ResourceQuotaScope]bool{}
	for _, s := range old.Spec.Scopes {
		oldScopes[s] = true
	}
	for _, s := range rq.Spec.Scopes {
		newScopes[s] = true
	}
	same := len(oldScopes) == len(newScopes)
	for s := range newScopes {
		same = same && oldScopes[s]
	}
	if !same {
		errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), rq.Spec.Scopes, fieldImmutableErrorMsg))
	}
	return errs
}

func validateResourceQuotaStatusUpdate(rq, old *corev1.ResourceQuota) field.ErrorList {
	errs := validateObjectMetaUpdate(&rq.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateQuotaStatus(&rq.Status, field.NewPath("status"))...)
}
