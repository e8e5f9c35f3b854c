package validation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podkit/podkit/apiserver/admission"
)

var (
	_ admission.Validator = (*Validator)(nil)
	_ admission.Handler   = (*Validator)(nil)
	_ admission.Namer     = (*Validator)(nil)
)

// Name names the Validator in admission errors, logs and metrics.
func (v *Validator) Name() string { return "ObjectValidation" }

// Handles reports that object validation applies to creates and updates.
func (v *Validator) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Validate lets the Validator sit in an admission chain as the "object
// validation" step: Create runs ValidateCreate; Update runs ValidateUpdate,
// ValidateStatusUpdate for the status subresource, or
// ValidateEphemeralContainersUpdate for pods/ephemeralcontainers. Other
// operations pass.
// A failure is the 422 Invalid error of NewInvalid, named after a.Kind when
// set.
func (v *Validator) Validate(ctx context.Context, a *admission.Attributes) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("validating %s %s: %w", a.Resource.Resource, a.Name, err)
	}
	var errs field.ErrorList
	switch a.Operation {
	case admission.Create:
		errs = v.ValidateCreate(a.Object)
	case admission.Update:
		pod, isPod := a.Object.(*corev1.Pod)
		oldPod, oldIsPod := a.OldObject.(*corev1.Pod)
		switch {
		case a.Subresource == "status":
			errs = v.ValidateStatusUpdate(a.Object, a.OldObject)
		case a.Subresource == "ephemeralcontainers" && isPod && oldIsPod:
			errs = v.ValidateEphemeralContainersUpdate(pod, oldPod)
		default:
			errs = v.ValidateUpdate(a.Object, a.OldObject)
		}
	default:
		return nil
	}
	if len(errs) == 0 {
		return nil
	}
	gk := a.Kind.GroupKind()
	if gk == (schema.GroupKind{}) {
		gk, _ = v.GroupKind(a.Object)
	}
	name := a.Name
	if name == "" {
		name = objectName(a.Object)
	}
	return NewInvalidFor(gk, name, errs)
}
