package fieldmanager

import (
	"reflect"
	"sync"

	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// The walk resolves the schema of each struct field once per Go struct
// type and schema map, not once per field of every object: a fieldPlan
// per serialized field, in the reflection cache's field order.

// fieldPlan is a struct field's schema: its atom, or err (errSlowPath)
// when the library would reject the field (not declared) or the walk does
// not cover its type (not exactly one atom).
type fieldPlan struct {
	atom smdschema.Atom
	err  error
}

type structPlanKey struct {
	t reflect.Type
	m *smdschema.Map
}

// structPlans caches the field plans of struct types, for one schema.
type structPlans struct {
	schema *smdschema.Schema
	m      sync.Map // structPlanKey -> []fieldPlan
}

// of returns the field plans of Go struct type t described by schema map m.
func (p *structPlans) of(t reflect.Type, m *smdschema.Map) []fieldPlan {
	k := structPlanKey{t: t, m: m}
	if v, ok := p.m.Load(k); ok {
		return v.([]fieldPlan)
	}
	fields := value.TypeReflectEntryOf(t).OrderedFields()
	plan := make([]fieldPlan, len(fields))
	for i, f := range fields {
		tr := m.ElementType
		if sf, ok := m.FindField(f.JsonName); ok {
			tr = sf.Type
		} else if (tr == smdschema.TypeRef{}) {
			plan[i].err = errSlowPath // validation: field not declared in schema
			continue
		}
		plan[i].atom, plan[i].err = atomOf(p.schema, tr)
	}
	p.m.Store(k, plan)
	return plan
}

// atomOf resolves tr to a schema atom with exactly one of scalar, list,
// map: then deducing the atom from a value, as the library does first,
// cannot change it.
func atomOf(s *smdschema.Schema, tr smdschema.TypeRef) (smdschema.Atom, error) {
	a, ok := s.Resolve(tr)
	if !ok {
		return a, errSlowPath
	}
	n := 0
	if a.Scalar != nil {
		n++
	}
	if a.List != nil {
		n++
	}
	if a.Map != nil {
		n++
	}
	if n != 1 {
		return a, errSlowPath
	}
	return a, nil
}

// fieldAtom returns the atom of the entry key of a map of schema t.
func (p *structPlans) fieldAtom(t *smdschema.Map, key string) (smdschema.Atom, error) {
	tr := t.ElementType
	if f, ok := t.FindField(key); ok {
		tr = f.Type
	} else if (tr == smdschema.TypeRef{}) {
		return smdschema.Atom{}, errSlowPath // validation: field not declared in schema
	}
	return atomOf(p.schema, tr)
}
