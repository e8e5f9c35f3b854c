package fieldmanager

import (
	"bytes"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// over the Go value (createwalk.go) and writes the same single entry; any
// object it does not cover goes the library's way. Updates, applies and
// subresource writes always do.

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

// createPlan is what the fast path needs per kind, built on first use.
type createPlan struct {
	ok    bool // false: the kind always takes the library's path
	typ   reflect.Type
	empty runtime.Object // scheme.New(gvk), never modified
	reset fieldpath.Filter
	last  atomic.Pointer[createMemo]
}

// createMemo is the field set the kind's latest create recorded, with its
// JSON. Both are never modified.
type createMemo struct {
	set *fieldpath.Set
	raw []byte
}

// encode returns set's JSON (FieldsV1). The creates of a kind mostly
// record one same set (the pods of one template, the Events of one
// component): when set equals the latest one, its JSON is copied instead
// of written again, which costs a fraction of ToJSON.
func (p *createPlan) encode(set *fieldpath.Set) ([]byte, error) {
	if last := p.last.Load(); last != nil && last.set.Equals(set) {
		return bytes.Clone(last.raw), nil
	}
	raw, err := set.ToJSON()
	if err != nil {
		return nil, err
	}
	p.last.Store(&createMemo{set: set, raw: bytes.Clone(raw)})
	return raw, nil
}

// createPlans caches createPlan per GroupVersionKind.
type createPlans struct {
	m sync.Map // schema.GroupVersionKind -> *createPlan
}

func (m *Manager) createPlan(gvk schema.GroupVersionKind) *createPlan {
	if p, ok := m.plans.m.Load(gvk); ok {
		return p.(*createPlan)
	}
	p := &createPlan{}
	if empty, err := m.scheme.New(gvk); err == nil {
		if _, isU := empty.(*unstructured.Unstructured); !isU && reflect.TypeOf(empty).Kind() == reflect.Pointer {
			p.ok, p.typ, p.empty = true, reflect.TypeOf(empty), empty
		}
	}
	if set := m.reset(gvk, ""); set != nil && !set.Empty() {
		p.reset = fieldpath.NewExcludeSetFilter(set)
	}
	actual, _ := m.plans.m.LoadOrStore(gvk, p)
	return actual.(*createPlan)
}

// createFields records the create of obj by manager as Update(nil, obj)
// would, and reports whether it did; when it did not, obj is untouched.
func (m *Manager) createFields(obj runtime.Object, gvk schema.GroupVersionKind, manager string) bool {
	p := m.createPlan(gvk)
	if !p.ok || reflect.TypeOf(obj) != p.typ {
		return false
	}
	a, err := meta.Accessor(obj)
	if err != nil || len(a.GetManagedFields()) != 0 {
		return false
	}
	set, err := m.createSet(p, obj, gvk)
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
func (m *Manager) createSet(p *createPlan, obj runtime.Object, gvk schema.GroupVersionKind) (*fieldpath.Set, error) {
	t, err := m.tc.typeFor(gvk)
	if err != nil {
		return nil, err
	}
	w := &createWalker{schema: t.Schema, set: &fieldpath.Set{}}
	lhs, err := wrap(reflect.ValueOf(p.empty), nil)
	if err != nil {
		return nil, err
	}
	rhs, err := wrap(reflect.ValueOf(obj), nil)
	if err != nil {
		return nil, err
	}
	if err := w.compare(t.TypeRef, &lhs, rhs); err != nil {
		return nil, err
	}
	set := w.set
	if p.reset != nil {
		set = p.reset.Filter(set)
	}
	return set.Difference(stripFields), nil
}
