package validation

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NewInvalid turns errs into the error Kubernetes returns for an invalid
// object: a *apierrors.StatusError with reason Invalid, code 422 and one cause
// per field error, e.g. `Pod "web" is invalid: spec.containers[0].image:
// Required value`. It returns nil when errs is empty. The group and kind come
// from obj's Go type (or its TypeMeta); the name from its metadata.
func (v *Validator) NewInvalid(obj runtime.Object, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	gk, _ := v.GroupKind(obj)
	return NewInvalidFor(gk, objectName(obj), errs)
}

// NewInvalid is Validator.NewInvalid with the built-in kind table.
func NewInvalid(obj runtime.Object, errs field.ErrorList) error {
	return Default().NewInvalid(obj, errs)
}

// NewInvalidFor builds the Invalid error for a known group and kind (for
// example from the request's GroupVersionKind). It returns nil when errs is
// empty.
func NewInvalidFor(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}

func objectName(obj runtime.Object) string {
	if isNil(obj) {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if m.GetName() != "" {
		return m.GetName()
	}
	return m.GetGenerateName()
}
