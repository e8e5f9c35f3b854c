package validation

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateLease: leaseDurationSeconds > 0 and leaseTransitions >= 0 when set.
func validateLease(l *coordinationv1.Lease) field.ErrorList {
	errs := validateObjectMeta(&l.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateLeaseSpec(&l.Spec)...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if s := spec.Strategy; s != nil && *s != coordinationv1.OldestEmulationVersion {
		errs = append(errs, field.NotSupported(p.Child("strategy"), *s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
	}
	return errs
}

func validateLeaseUpdate(l, old *coordinationv1.Lease) field.ErrorList {
	errs := validateObjectMetaUpdate(&l.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateLeaseSpec(&l.Spec)...)
}

// validateScale validates a scale subresource request: spec.replicas >= 0.
func validateScale(s *autoscalingv1.Scale) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	if s.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), s.Spec.Replicas, isNegativeErrorMsg))
	}
	return errs
}

// validateScaleUpdate validates a scale update as a new Scale, as Kubernetes
// does (old is the current scale of the parent).
func validateScaleUpdate(s, _ *autoscalingv1.Scale) field.ErrorList {
	return validateScale(s)
}
