package fieldmanager

import (
	"bytes"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// kindPlan is what the fast paths need per kind and subresource, built on
// first use.
type kindPlan struct {
	ok     bool // false: the kind always takes the library's path
	typ    reflect.Type
	empty  runtime.Object // scheme.New(gvk), never modified
	gv     string         // the apiVersion of entries written through it
	root   smdschema.Atom // the kind's schema type
	fields *structPlans
	reset  *fieldpath.Set    // fields the subresource resets, or nil
	recon  *typed.TypedValue // the kind's type, to reconcile field sets with
	sets   *setCache         // shared by the plans of the kind
	last   atomic.Pointer[encodeMemo]
	create createMemo // shapes and walkers of creates (shape.go)
}

// encodeMemo is the field set the plan encoded last, with its JSON. Both
// are never modified.
type encodeMemo struct {
	set *fieldpath.Set
	raw []byte
}

// encode returns set's JSON (FieldsV1). The writes of a kind mostly
// record one same set (the pods of one template, the Events of one
// component): when set equals the latest one, its JSON is copied instead
// of written again, which costs a fraction of ToJSON.
func (p *kindPlan) encode(set *fieldpath.Set) ([]byte, error) {
	if last := p.last.Load(); last != nil && last.set.Equals(set) {
		return bytes.Clone(last.raw), nil
	}
	raw, err := set.ToJSON()
	if err != nil {
		return nil, err
	}
	p.last.Store(&encodeMemo{set: set, raw: bytes.Clone(raw)})
	return raw, nil
}

// kindPlans caches kindPlan per kind and subresource.
type kindPlans struct {
	m    sync.Map // managerKey -> *kindPlan
	sets sync.Map // schema.GroupVersionKind -> *setCache
}

func (m *Manager) plan(gvk schema.GroupVersionKind, subresource string) *kindPlan {
	k := managerKey{gvk: gvk, subresource: subresource}
	if p, ok := m.plans.m.Load(k); ok {
		return p.(*kindPlan)
	}
	sets, _ := m.plans.sets.LoadOrStore(gvk, &setCache{})
	p := &kindPlan{gv: gvk.GroupVersion().String(), sets: sets.(*setCache)}
	empty, err := m.scheme.New(gvk)
	t, terr := m.tc.typeFor(gvk)
	if err == nil && terr == nil {
		if _, isU := empty.(*unstructured.Unstructured); !isU && reflect.TypeOf(empty).Kind() == reflect.Pointer {
			p.typ, p.empty, p.fields = reflect.TypeOf(empty), empty, m.fields
			p.root, err = atomOf(t.Schema, t.TypeRef)
			p.ok = err == nil && t.Schema == m.fields.schema
			p.recon = typed.AsTypedUnvalidated(value.NewValueInterface(map[string]interface{}{}), t.Schema, t.TypeRef)
		}
	}
	if set := m.reset(gvk, subresource); set != nil && !set.Empty() {
		p.reset = set
	}
	actual, _ := m.plans.m.LoadOrStore(k, p)
	return actual.(*kindPlan)
}
