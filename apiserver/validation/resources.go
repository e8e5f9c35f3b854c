package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource-name classes, as in Kubernetes' core helper package.
const (
	hugePagesPrefix        = "hugepages-"
	requestsHugePagesPfx   = "requests.hugepages-"
	requestsPrefix         = "requests."
	isInvalidQuotaResource = "must be a standard resource for quota"
)

var standardContainerResources = set("cpu", "memory", "ephemeral-storage")

var standardResources = set(
	"cpu", "memory", "ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "storage", "requests.storage",
	"services.nodeports", "services.loadbalancers",
)

var standardQuotaResources = set(
	"cpu", "memory", "ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
)

var integerResources = set(
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
)

func set(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), hugePagesPrefix)
}

func isQuotaHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), hugePagesPrefix) || strings.HasPrefix(string(name), requestsHugePagesPfx)
}

// isNativeResource: unprefixed, or in the kubernetes.io domain.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

// isExtendedResourceName: a fully qualified, non-native name that is also
// valid with the "requests." quota prefix.
func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), requestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(requestsPrefix+string(name))) == 0
}

// isOvercommitAllowed: requests may be below limits only for native,
// non-hugepage resources.
func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

func isIntegerResourceName(name corev1.ResourceName) bool {
	return integerResources[string(name)] || isExtendedResourceName(name)
}

func isStandardResourceName(name corev1.ResourceName) bool {
	return standardResources[string(name)] || isQuotaHugePageResourceName(name)
}

func isStandardContainerResourceName(name corev1.ResourceName) bool {
	return standardContainerResources[string(name)] || isHugePageResourceName(name)
}

func isStandardQuotaResourceName(name corev1.ResourceName) bool {
	return standardQuotaResources[string(name)] || isQuotaHugePageResourceName(name)
}

// validateResourceName: a qualified name that, when unprefixed, is standard.
func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateQualifiedName(string(name), fldPath)
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !isStandardResourceName(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !isStandardContainerResourceName(name) {
			return append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResourceName(name) {
		return append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func validateQuotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") && !isStandardQuotaResourceName(name) {
		return append(errs, field.Invalid(fldPath, name, isInvalidQuotaResource))
	}
	return errs
}

// validateResourceQuantity: non-negative, and whole for integer resources.
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), isNegativeErrorMsg))
	}
	if isIntegerResourceName(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), isNotIntegerErrorMsg))
	}
	return errs
}

// hugePageValueError reports a hugepages quantity that is not a whole number
// of pages.
func hugePageValueError(name corev1.ResourceName, q resource.Quantity) error {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), hugePagesPrefix))
	if err != nil || size.Value() <= 0 || q.Value()%size.Value() != 0 {
		return fmt.Errorf("%s is not positive integer multiple of %s", q.String(), name)
	}
	return nil
}

// validateResourceRequirements validates container (or pod-level, or
// overhead) resources: names, quantities, requests <= limits, requests ==
// limits for resources that cannot be overcommitted, hugepages multiples, and
// claim references.
func validateResourceRequirements(req *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, podClaims map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	var cpuOrMemory, hugePages bool
	for _, name := range sortedResourceNames(req.Limits) {
		q := req.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if isHugePageResourceName(name) {
			hugePages = true
			if err := hugePageValueError(name, q); err != nil {
				errs = append(errs, field.Invalid(p, q.String(), err.Error()))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	for _, name := range sortedResourceNames(req.Requests) {
		q := req.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if limit, ok := req.Limits[name]; ok {
			switch {
			case q.Cmp(limit) != 0 && !isOvercommitAllowed(name):
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			case q.Cmp(limit) > 0:
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePageResourceName(name) {
			hugePages = true
			if err := hugePageValueError(name, q); err != nil {
				errs = append(errs, field.Invalid(p, q.String(), err.Error()))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return append(errs, validateResourceClaimNames(req.Claims, podClaims, fldPath.Child("claims"))...)
}

// validateResourceClaimNames checks that container claims name entries of
// spec.resourceClaims, once each.
func validateResourceClaimNames(claims []corev1.ResourceClaim, podClaims map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range claims {
		p := fldPath.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		key := c.Name
		if c.Request != "" {
			errs = append(errs, validateDNS1123Label(c.Request, p.Child("request"))...)
			key += "/" + c.Request
		}
		if seen[key] || seen[c.Name] {
			errs = append(errs, field.Duplicate(p, key))
		}
		seen[key] = true
		if !podClaims[c.Name] {
			e := field.NotFound(p, c.Name)
			e.Detail = "must be one of the names in pod.spec.resourceClaims"
			if len(podClaims) == 0 {
				e.Detail += " which is empty"
			}
			errs = append(errs, e)
		}
	}
	return errs
}

// sortedResourceNames returns the keys of l in order, for deterministic
// error lists.
func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
