package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var standardLimitTypes = set(string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim))

func validateLimitType(t corev1.LimitType, p *field.Path) field.ErrorList {
	errs := validateQualifiedName(string(t), p)
	if len(errs) == 0 && !strings.Contains(string(t), "/") && !standardLimitTypes[string(t)] {
		errs = append(errs, field.Invalid(p, t, "must be a standard limit type or fully qualified"))
	}
	return errs
}

func validateLimitResourceName(t corev1.LimitType, name corev1.ResourceName, p *field.Path) field.ErrorList {
	if t == corev1.LimitTypePod || t == corev1.LimitTypeContainer {
		return validateContainerResourceName(name, p)
	}
	return validateResourceName(name, p)
}

// validateLimitRange: known, unique limit types and, per resource,
// min <= defaultRequest <= default <= max, maxLimitRequestRatio >= 1.
func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := validateObjectMeta(&lr.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	seenTypes := map[corev1.LimitType]bool{}
	for i := range lr.Spec.Limits {
		l := &lr.Spec.Limits[i]
		p := field.NewPath("spec", "limits").Index(i)
		errs = append(errs, validateLimitType(l.Type, p.Child("type"))...)
		if seenTypes[l.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), l.Type))
		}
		seenTypes[l.Type] = true

		keys := map[corev1.ResourceName]bool{}
		collect := func(name string, list corev1.ResourceList) {
			for _, k := range sortedResourceNames(list) {
				errs = append(errs, validateLimitResourceName(l.Type, k, p.Child(name).Key(string(k)))...)
				keys[k] = true
			}
		}
		collect("max", l.Max)
		collect("min", l.Min)
		if l.Type == corev1.LimitTypePod {
			if len(l.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(l.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			collect("default", l.Default)
			collect("defaultRequest", l.DefaultRequest)
		}
		if l.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := l.Min[corev1.ResourceStorage]
			_, hasMax := l.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		collect("maxLimitRequestRatio", l.MaxLimitRequestRatio)
		names := make(corev1.ResourceList, len(keys))
		for k := range keys {
			names[k] = resource.Quantity{}
		}
		for _, k := range sortedResourceNames(names) {
			errs = append(errs, validateLimitOrdering(l, k, p)...)
		}
	}
	return errs
}

func validateLimitOrdering(l *corev1.LimitRangeItem, k corev1.ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	key := string(k)
	minQ, hasMin := l.Min[k]
	maxQ, hasMax := l.Max[k]
	def, hasDef := l.Default[k]
	defReq, hasDefReq := l.DefaultRequest[k]
	ratio, hasRatio := l.MaxLimitRequestRatio[k]
	if l.Type == corev1.LimitTypePod {
		hasDef, hasDefReq = false, false
	}
	if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("min").Key(key), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
	}
	if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
	}
	if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
	}
	if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
	}
	if hasDef && hasMin && minQ.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(p.Child("default").Key(key), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
	}
	if hasDef && hasMax && def.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("default").Key(key), maxQ, fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
	}
	if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if hasRatio && hasMin && hasMax && minQ.Sign() > 0 {
		r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
		if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
			r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
		}
		if limit := float64(hi) / float64(lo); r > limit {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
		}
	}
	if !isOvercommitAllowed(k) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), k)))
	}
	return errs
}

func validateLimitRangeUpdate(lr, old *corev1.LimitRange) field.ErrorList {
	errs := validateObjectMetaUpdate(&lr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateLimitRange(lr)...)
}

var standardQuotaScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeTerminating,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
}

var (
	podCountQuotaResources   = set("pods")
	podComputeQuotaResources = set("cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory")
)

func isStandardQuotaScope(s corev1.ResourceQuotaScope) bool {
	for _, x := range standardQuotaScopes {
		if x == s {
			return true
		}
	}
	return false
}

// quotaScopeAllows reports whether hard limit r makes sense under scope s.
func quotaScopeAllows(s corev1.ResourceQuotaScope, r corev1.ResourceName) bool {
	switch s {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCountQuotaResources[string(r)] || podComputeQuotaResources[string(r)]
	case corev1.ResourceQuotaScopeBestEffort:
		return podCountQuotaResources[string(r)]
	}
	return true
}
