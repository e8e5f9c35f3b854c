package fieldmanager

import (
	"bytes"
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
// over the Go value (walk.go), which records the paths it finds as the
// create's shape (shape.go) so that a create shaped like a recent one of
// its kind reuses that one's set and JSON, and writes the same single
// entry; any object it does not cover goes the library's way, and so do
// applies.

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
	raw, err := p.createJSON(obj)
	if err != nil {
		return false
	}
	if raw == nil {
		a.SetManagedFields(nil)
		return true
	}
	if manager == "" {
		manager = "unknown"
	}
	// The entry, its time and its fields in one allocation.
	e := &createdEntry{
		time:   metav1.Time{Time: m.now().UTC().Truncate(time.Second)},
		fields: metav1.FieldsV1{Raw: bytes.Clone(raw)},
	}
	e.entry[0] = metav1.ManagedFieldsEntry{
		Manager:    manager,
		Operation:  metav1.ManagedFieldsOperationUpdate,
		APIVersion: p.gv,
		Time:       &e.time,
		FieldsType: "FieldsV1",
		FieldsV1:   &e.fields,
	}
	a.SetManagedFields(e.entry[:])
	return true
}

// createdEntry holds the managedFields of a create.
type createdEntry struct {
	entry  [1]metav1.ManagedFieldsEntry
	time   metav1.Time
	fields metav1.FieldsV1
}

// createJSON returns the FieldsV1 JSON of the manager's field set of a
// create of obj, or nil when the set is empty. The result is shared: the
// caller copies it. The walk records the create's shape (shape.go): a
// shape seen lately gives its set's JSON, a new one is decoded into the
// set.
func (p *kindPlan) createJSON(obj runtime.Object) ([]byte, error) {
	w := p.create.createWalker(p.fields, p.reset)
	defer p.create.putWalker(w)
	if err := p.compareCreate(w, obj); err != nil {
		return nil, err
	}
	if w.rec.bad {
		set, err := p.createSet(obj)
		if err != nil || set.Empty() {
			return nil, err
		}
		return p.encode(set)
	}
	if memo := p.create.lookup(w.rec.buf); memo != nil {
		return memo.raw, nil
	}
	full, err := shapeSet(w.rec.buf)
	if err != nil {
		return nil, err
	}
	memo := &shapeMemo{shape: bytes.Clone(w.rec.buf)}
	if set := full.Difference(stripFields); !set.Empty() {
		if memo.raw, err = p.encode(set); err != nil {
			return nil, err
		}
	}
	p.create.store(memo)
	return memo.raw, nil
}

// createSet returns the manager's field set of a create of obj, built
// path by path.
func (p *kindPlan) createSet(obj runtime.Object) (*fieldpath.Set, error) {
	w := newWalker(p.fields, p.reset, false)
	if err := p.compareCreate(w, obj); err != nil {
		return nil, err
	}
	return w.changed.set.Difference(stripFields), nil
}

// compareCreate walks obj against the kind's empty object.
func (p *kindPlan) compareCreate(w *walker, obj runtime.Object) error {
	lhs, err := wrap(reflect.ValueOf(p.empty), nil)
	if err != nil {
		return err
	}
	rhs, err := wrap(reflect.ValueOf(obj), nil)
	if err != nil {
		return err
	}
	return w.compare(p.root, some(lhs), some(rhs))
}
