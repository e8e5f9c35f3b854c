package validation

import (
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Messages shared with Kubernetes.
const (
	isNegativeErrorMsg     = apivalidation.IsNegativeErrorMsg // "must be greater than or equal to 0"
	isNotPositiveErrorMsg  = "must be greater than zero"
	isNotIntegerErrorMsg   = "must be an integer"
	fieldImmutableErrorMsg = apivalidation.FieldImmutableErrorMsg // "field is immutable"
)

// Name rules per resource, as in Kubernetes.
var (
	nameIsDNSSubdomain = apivalidation.NameIsDNSSubdomain
	nameIsDNSLabel     = apivalidation.NameIsDNSLabel
	// Service names are DNS-1035 labels: they must start with a letter.
	nameIsDNS1035Label = apivalidation.NameIsDNS1035Label
)

// nameIsPathSegment is the RBAC name rule: anything that is safe as one URL
// path segment.
func nameIsPathSegment(name string, prefix bool) []string {
	return path.ValidatePathSegmentName(name, prefix)
}

// standardFinalizers are the finalizer names allowed without a domain prefix.
var standardFinalizers = map[string]bool{
	"kubernetes":                     true,
	metav1.FinalizerOrphanDependents: true,
	metav1.FinalizerDeleteDependents: true,
}

// validateObjectMeta is Kubernetes' core ValidateObjectMeta: the apimachinery
// rules plus "standard or fully qualified" finalizer names.
func validateObjectMeta(m *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(m, namespaced, nameFn, fldPath)
	return append(errs, validateKubeFinalizers(m.Finalizers, fldPath.Child("finalizers"))...)
}

// validateObjectMetaUpdate checks that name, namespace, uid, creationTimestamp,
// deletionTimestamp and deletionGracePeriodSeconds did not change, that
// resourceVersion is set and generation did not go down.
func validateObjectMetaUpdate(m, old *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(m, old, fldPath)
	return append(errs, validateKubeFinalizers(m.Finalizers, fldPath.Child("finalizers"))...)
}

func validateKubeFinalizers(finalizers []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		errs = append(errs, validateKubeFinalizerName(f, fldPath.Index(i))...)
	}
	return errs
}

func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

// validateFinalizerName validates a namespace spec finalizer: a qualified name
// that is standard or fully qualified.
func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, fldPath)
	return append(errs, validateKubeFinalizerName(name, fldPath)...)
}

// validateTemplateMeta validates the labels and annotations of an embedded
// pod template.
func validateTemplateMeta(m *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := validateLabels(m.Labels, fldPath.Child("labels"))
	return append(errs, apivalidation.ValidateAnnotations(m.Annotations, fldPath.Child("annotations"))...)
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateName applies a name rule to a reference such as a secret name.
func validateName(nameFn apivalidation.ValidateNameFunc, value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range nameFn(value, false) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(value, fldPath)
}

func validateImmutable(newVal, oldVal any, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

func validateLabels(labels map[string]string, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(labels, fldPath)
}
