package fieldmanager

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ResetFieldsFunc returns the fields that a write through subresource ("" for
// the main resource) of kind gvk can never change, because the REST
// strategy resets them before storing (the status on the main resource, the
// spec on the status subresource). A manager never owns such fields: they
// are dropped from its field set, so applying a status through the main
// resource neither claims it nor conflicts with the status writer. nil means
// none. It mirrors the GetResetFields of kube-apiserver's strategies.
type ResetFieldsFunc func(gvk schema.GroupVersionKind, subresource string) *fieldpath.Set

// statusResetExtra lists what kube-apiserver's status strategies reset
// beyond the spec.
var statusResetExtra = map[schema.GroupKind][]fieldpath.Path{
	{Kind: "Pod"}: {
		fieldpath.MakePathOrDie("metadata", "deletionTimestamp"),
		fieldpath.MakePathOrDie("metadata", "ownerReferences"),
	},
	{Group: "apps", Kind: "Deployment"}: {
		fieldpath.MakePathOrDie("metadata", "labels"),
	},
}

// DefaultResetFields returns the ResetFieldsFunc of the built-in kinds of
// scheme: a main-resource write resets status (when the kind has one), a
// status write resets spec (when the kind has one) plus the metadata
// kube-apiserver's status strategy keeps (pods: deletionTimestamp and
// ownerReferences; deployments: labels). Other subresources reset nothing.
func DefaultResetFields(scheme *runtime.Scheme) ResetFieldsFunc {
	return func(gvk schema.GroupVersionKind, subresource string) *fieldpath.Set {
		obj, err := scheme.New(gvk)
		if err != nil {
			return nil
		}
		switch subresource {
		case "":
			if hasField(obj, "Status") {
				return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
			}
		case "status":
			var paths []fieldpath.Path
			if hasField(obj, "Spec") {
				paths = append(paths, fieldpath.MakePathOrDie("spec"))
			}
			paths = append(paths, statusResetExtra[gvk.GroupKind()]...)
			if len(paths) > 0 {
				return fieldpath.NewSet(paths...)
			}
		}
		return nil
	}
}

// hasField reports whether obj is a pointer to a struct with the named
// struct-typed field.
func hasField(obj runtime.Object, name string) bool {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	f, ok := t.Elem().FieldByName(name)
	return ok && f.Type.Kind() == reflect.Struct
}
