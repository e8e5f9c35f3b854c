package validation

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const selectorMismatchMsg = "`selector` does not match template `labels`"

// validateWorkloadSelector requires a non-empty, valid label selector and
// returns it parsed (nil when invalid).
func validateWorkloadSelector(sel *metav1.LabelSelector, kind string, p *field.Path) (labels.Selector, field.ErrorList) {
	if sel == nil {
		return nil, field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "empty selector is invalid for "+kind))
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, append(errs, field.Invalid(p, sel, "invalid label selector"))
	}
	return s, errs
}

// validateTemplateForSelector validates a long-running workload's pod
// template: it must match the selector, restart Always and have no
// activeDeadlineSeconds.
func (v *Validator) validateTemplateForSelector(t *corev1.PodTemplateSpec, sel labels.Selector, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sel != nil && !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(p.Child("metadata", "labels"), t.Labels, selectorMismatchMsg))
	}
	errs = append(errs, v.validatePodTemplateSpec(t, p)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

func validateReplicas(r *int32, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	return validateNonnegative(int64(*r), p)
}

func (v *Validator) validateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := validateObjectMeta(&d.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

func (v *Validator) validateDeploymentSpec(spec *appsv1.DeploymentSpec, p *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, p.Child("replicas"))
	sel, selErrs := validateWorkloadSelector(spec.Selector, "deployment", p.Child("selector"))
	errs = append(errs, selErrs...)
	errs = append(errs, v.validateTemplateForSelector(&spec.Template, sel, "ReplicaSet", p.Child("template"))...)
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, p.Child("strategy"))...)
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(int64(*spec.ProgressDeadlineSeconds), p.Child("progressDeadlineSeconds"))...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(p.Child("progressDeadlineSeconds"), spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		ru := s.RollingUpdate
		unavailable, surge := intOrZero(ru.MaxUnavailable), intOrZero(ru.MaxSurge)
		rp := p.Child("rollingUpdate")
		errs := validatePositiveIntOrPercent(unavailable, rp.Child("maxUnavailable"))
		errs = append(errs, validatePositiveIntOrPercent(surge, rp.Child("maxSurge"))...)
		if intOrPercentValue(unavailable) == 0 && intOrPercentValue(surge) == 0 {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"))
		}
		return append(errs, notMoreThan100Percent(unavailable, rp.Child("maxUnavailable"))...)
	default:
		return field.ErrorList{field.NotSupported(p, s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
	return nil
}

func intOrZero(v *intstr.IntOrString) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt32(0)
	}
	return *v
}

func validatePositiveIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		return errs
	case intstr.Int:
		return validateNonnegative(int64(v.IntVal), p)
	}
	return field.ErrorList{field.Invalid(p, v, "must be an integer or percentage (e.g '5%')")}
}

// intOrPercentValue is the number of a percentage, or the integer.
func intOrPercentValue(v intstr.IntOrString) int {
	if v.Type == intstr.String {
		if len(validation.IsValidPercent(v.StrVal)) != 0 {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
		return n
	}
	return int(v.IntVal)
}

func notMoreThan100Percent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	if v.Type == intstr.String && len(validation.IsValidPercent(v.StrVal)) == 0 && intOrPercentValue(v) > 100 {
		return field.ErrorList{field.Invalid(p, v, "must not be greater than 100%")}
	}
	return nil
}

// validateDeploymentUpdate: apps/v1 makes the selector immutable.
func (v *Validator) validateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, v.validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
	return append(errs, validateImmutable(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

func validateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &d.Status, field.NewPath("status")
	errs = append(errs, validateNonnegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	errs = append(errs, validateReplicaCounts(p, st.Replicas, map[string]int32{
		"updatedReplicas": st.UpdatedReplicas, "readyReplicas": st.ReadyReplicas, "availableReplicas": st.AvailableReplicas,
	}, st.ReadyReplicas, st.AvailableReplicas)...)
	errs = append(errs, validateNonnegative(int64(st.UnavailableReplicas), p.Child("unavailableReplicas"))...)
	return append(errs, validateCollisionCount(st.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

// validateReplicaCounts: every count non-negative and at most
// status.replicas; available at most ready.
func validateReplicaCounts(p *field.Path, replicas int32, counts map[string]int32, ready, available int32) field.ErrorList {
	errs := validateNonnegative(int64(replicas), p.Child("replicas"))
	for _, name := range sortedKeys(counts) {
		n := counts[name]
		errs = append(errs, validateNonnegative(int64(n), p.Child(name))...)
		if n > replicas {
			errs = append(errs, field.Invalid(p.Child(name), n, "cannot be greater than status.replicas"))
		}
	}
	if available > ready {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), available, "cannot be greater than readyReplicas"))
	}
	return errs
}

func validateCollisionCount(cur, old *int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cur != nil {
		errs = append(errs, validateNonnegative(int64(*cur), p)...)
	}
	if (cur == nil && old != nil) || (cur != nil && old != nil && *cur < *old) {
		var value int32
		if cur != nil {
			value = *cur
		}
		errs = append(errs, field.Invalid(p, value, "cannot be decremented"))
	}
	return errs
}

func (v *Validator) validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := validateObjectMeta(&rs.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

func (v *Validator) validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, p *field.Path) field.ErrorList {
	errs := validateReplicas(spec.Replicas, p.Child("replicas"))
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	sel, selErrs := validateWorkloadSelector(spec.Selector, "deployment", p.Child("selector"))
	errs = append(errs, selErrs...)
	return append(errs, v.validateTemplateForSelector(&spec.Template, sel, "ReplicaSet", p.Child("template"))...)
}

// validateReplicaSetUpdate: apps/v1 makes the selector immutable.
func (v *Validator) validateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, v.validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	return append(errs, validateImmutable(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

func validateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &rs.Status, field.NewPath("status")
	errs = append(errs, validateReplicaCounts(p, st.Replicas, map[string]int32{
		"fullyLabeledReplicas": st.FullyLabeledReplicas, "readyReplicas": st.ReadyReplicas, "availableReplicas": st.AvailableReplicas,
	}, st.ReadyReplicas, st.AvailableReplicas)...)
	return append(errs, validateNonnegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
}
