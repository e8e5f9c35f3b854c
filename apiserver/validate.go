package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ObjectValidator validates objects as Kubernetes' per-type validation
// does; *validation.Validator implements it.
type ObjectValidator interface {
	ValidateCreate(obj runtime.Object) field.ErrorList
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList
}

// invalid turns field errors into the 422 Invalid error of res's kind.
func invalid(res *Resource, obj runtime.Object, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	name := ""
	if m, err := meta.Accessor(obj); err == nil {
		name = m.GetName()
	}
	return apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), name, errs)
}

func (s *Server) validateCreate(res *Resource, obj runtime.Object) error {
	return invalid(res, obj, s.validator.ValidateCreate(obj))
}

func (s *Server) validateUpdate(res *Resource, sub string, obj, old runtime.Object) error {
	switch sub {
	case "status":
		return invalid(res, obj, s.validator.ValidateStatusUpdate(obj, old))
	default:
		return invalid(res, obj, s.validator.ValidateUpdate(obj, old))
	}
}

// bindingErrors validates a Binding as Kubernetes does.
func bindingErrors(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// fieldErrorList is a one-error list for simple checks.
func fieldErrorList(path string, value any, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, detail)}
}
