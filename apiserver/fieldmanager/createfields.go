package fieldmanager

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The create fast path. A create is recorded like any Update with no live
// object: apimachinery's field manager converts the new object and an empty
// one to typed values (validating the new one), compares them, and gives the
// manager every added or modified field, minus the fields the subresource
// resets and the identity metadata it never records. That is a third of a
// pod create's CPU. For a create of a typed object that carries no
// managedFields of its own, createFields computes the same set in one pass
// over the Go value (walk.go) and writes the same single entry; any
// object it does not cover goes the library's way, and so do applies.

// stripFields are the paths the library's stripMetaManager removes from
// every manager's set (an exact-path difference, not recursive).
var stripFields = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// createFields records the create of obj by manager as Update(nil, obj)
// would, and reports whether it did; when it did not, obj is untouched.
func (m *Manager) createFields(obj runtime.Object, gvk schema.GroupVersionKind, manager string) bool {
	p := m.plan(gvk, "")
	if !p.ok || reflect.TypeOf(obj) != p.typ {
		return false
	}
	a, err := meta.Accessor(obj)
	if err != nil || len(a.GetManagedFields()) != 0 {
		return false
	}
	set, err := p.createSet(obj)
	if err != nil {
		return false
	}
	if set.Empty() {
		a.SetManagedFields(nil)
		return true
	}
	raw, err := p.encode(set)
	if err != nil {
		return false
	}
	if manager == "" {
		manager = "unknown"
	}
	a.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager:    manager,
		Operation:  metav1.ManagedFieldsOperationUpdate,
		APIVersion: gvk.GroupVersion().String(),
		Time:       &metav1.Time{Time: m.now().UTC().Truncate(time.Second)},
		FieldsType: "FieldsV1",
		FieldsV1:   &metav1.FieldsV1{Raw: raw},
	}})
	return true
}

// createSet returns the manager's field set of a create of obj.
func (p *kindPlan) createSet(obj runtime.Object) (*fieldpath.Set, error) {
	w := newWalker(p.fields, p.reset, false)
	lhs, err := wrap(reflect.ValueOf(p.empty), nil)
	if err != nil {
		return nil, err
	}
	rhs, err := wrap(reflect.ValueOf(obj), nil)
	if err != nil {
		return nil, err
	}
	if err := w.compare(p.root, some(lhs), some(rhs)); err != nil {
		return nil, err
	}
	return w.changed.set.Difference(stripFields), nil
}
