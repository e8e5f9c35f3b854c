package validation

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func (v *Validator) validatePodTemplate(pt *corev1.PodTemplate) field.ErrorList {
	errs := validateObjectMeta(&pt.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validatePodTemplateSpec(&pt.Template, field.NewPath("template"))...)
}

func (v *Validator) validatePodTemplateUpdate(pt, old *corev1.PodTemplate) field.ErrorList {
	errs := validateObjectMetaUpdate(&pt.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, v.validatePodTemplateSpec(&pt.Template, field.NewPath("template"))...)
}

func (v *Validator) validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	errs := validateObjectMeta(&rc.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validateRCSpec(&rc.Spec, field.NewPath("spec"))...)
}

func (v *Validator) validateRCSpec(spec *corev1.ReplicationControllerSpec, p *field.Path) field.ErrorList {
	errs := validateNonnegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))
	sel := labels.Set(spec.Selector).AsSelector()
	if sel.Empty() {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	}
	errs = append(errs, validateReplicas(spec.Replicas, p.Child("replicas"))...)
	if spec.Template == nil {
		return append(errs, field.Required(p.Child("template"), ""))
	}
	return append(errs, v.validateTemplateForSelector(spec.Template, sel, "ReplicationController", p.Child("template"))...)
}

func (v *Validator) validateReplicationControllerUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	errs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, v.validateRCSpec(&rc.Spec, field.NewPath("spec"))...)
}

func validateReplicationControllerStatusUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	errs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &rc.Status, field.NewPath("status")
	errs = append(errs, validateReplicaCounts(p, st.Replicas, map[string]int32{
		"fullyLabeledReplicas": st.FullyLabeledReplicas, "readyReplicas": st.ReadyReplicas, "availableReplicas": st.AvailableReplicas,
	}, st.ReadyReplicas, st.AvailableReplicas)...)
	return append(errs, validateNonnegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
}

func (v *Validator) validateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	errs := validateObjectMeta(&ss.ObjectMeta, true, nameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, v.validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"))...)
}

func (v *Validator) validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	switch spec.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(p.Child("updateStrategy"), ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(p.Child("updateStrategy", "rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			errs = append(errs, validateNonnegative(int64(*ru.Partition), p.Child("updateStrategy", "rollingUpdate", "partition"))...)
		}
	default:
		errs = append(errs, field.Invalid(p.Child("updateStrategy"), spec.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	errs = append(errs, validateReplicas(spec.Replicas, p.Child("replicas"))...)
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	sel, selErrs := validateWorkloadSelector(spec.Selector, "statefulset", p.Child("selector"))
	errs = append(errs, selErrs...)
	return append(errs, v.validateTemplateForSelector(&spec.Template, sel, "StatefulSet", p.Child("template"))...)
}

// validateStatefulSetUpdate: only replicas, ordinals, template,
// updateStrategy, persistentVolumeClaimRetentionPolicy and minReadySeconds
// may change.
func (v *Validator) validateStatefulSetUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&ss.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, v.validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"))...)
	c := ss.Spec.DeepCopy()
	c.Replicas, c.Template, c.UpdateStrategy = old.Spec.Replicas, old.Spec.Template, old.Spec.UpdateStrategy
	c.MinReadySeconds, c.Ordinals = old.Spec.MinReadySeconds, old.Spec.Ordinals
	c.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
	if !equality.Semantic.DeepEqual(*c, old.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return errs
}

func validateStatefulSetStatusUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&ss.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &ss.Status, field.NewPath("status")
	errs = append(errs, validateReplicaCounts(p, st.Replicas, map[string]int32{
		"readyReplicas": st.ReadyReplicas, "currentReplicas": st.CurrentReplicas,
		"updatedReplicas": st.UpdatedReplicas, "availableReplicas": st.AvailableReplicas,
	}, st.ReadyReplicas, st.AvailableReplicas)...)
	errs = append(errs, validateNonnegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	return append(errs, validateCollisionCount(st.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

func (v *Validator) validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	errs := validateObjectMeta(&ds.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, v.validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

func (v *Validator) validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, p *field.Path) field.ErrorList {
	sel, errs := validateWorkloadSelector(spec.Selector, "daemonset", p.Child("selector"))
	errs = append(errs, v.validateTemplateForSelector(&spec.Template, sel, "DaemonSet", p.Child("template"))...)
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	us := p.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru := spec.UpdateStrategy.RollingUpdate
		if ru == nil {
			return append(errs, field.Required(us.Child("rollingUpdate"), ""))
		}
		rp := us.Child("rollingUpdate")
		unavailable, surge := intOrZero(ru.MaxUnavailable), intOrZero(ru.MaxSurge)
		errs = append(errs, validatePositiveIntOrPercent(unavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validatePositiveIntOrPercent(surge, rp.Child("maxSurge"))...)
		errs = append(errs, notMoreThan100Percent(unavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, notMoreThan100Percent(surge, rp.Child("maxSurge"))...)
		hasU, hasS := intOrPercentValue(unavailable) != 0, intOrPercentValue(surge) != 0
		switch {
		case hasU && hasS:
			errs = append(errs, field.Invalid(rp.Child("maxSurge"), surge, "may not be set when maxUnavailable is non-zero"))
		case !hasU && !hasS:
			errs = append(errs, field.Required(rp.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(us, spec.UpdateStrategy, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)}))
	}
	return errs
}

// validateDaemonSetUpdate: apps/v1 makes the selector immutable.
func (v *Validator) validateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, v.validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
	return append(errs, validateImmutable(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

func validateDaemonSetStatusUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	errs := validateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &ds.Status, field.NewPath("status")
	for _, c := range []struct {
		name string
		n    int32
	}{{"currentNumberScheduled", st.CurrentNumberScheduled}, {"numberMisscheduled", st.NumberMisscheduled},
		{"desiredNumberScheduled", st.DesiredNumberScheduled}, {"numberReady", st.NumberReady},
		{"updatedNumberScheduled", st.UpdatedNumberScheduled}, {"numberAvailable", st.NumberAvailable},
		{"numberUnavailable", st.NumberUnavailable}} {
		errs = append(errs, validateNonnegative(int64(c.n), p.Child(c.name))...)
	}
	errs = append(errs, validateNonnegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	return append(errs, validateCollisionCount(st.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}
