// Package semantic compares API objects as apimachinery's semantic
// equality does (apiequality.Semantic.DeepEqual: Quantities by value,
// times by instant, nil and empty slices and maps alike), with the same
// answer, but ordered to find a difference early. The API server asks
// "did this write change anything?" up to three times per update (the
// storage engine's no-op check, the update handler's, and the
// managedFields timestamp check), and the answer is nearly always "yes".
//
// The answer for two structs is the conjunction of the answers for their
// fields, so the order the fields are compared in does not change it,
// only how soon a change is found. A walk in declaration order reaches a
// pod's status, or spec.nodeName, only after its containers, their
// resources and probes: tens of microseconds and hundreds of allocations
// for every binding and status update. A Comparer therefore
//
//  1. compares the plain exported scalars (strings, integers, booleans) of
//     the object and of its struct fields directly, where semantic and
//     plain equality agree and no reflection call or allocation is needed;
//  2. answers for nil or empty pointers, slices and maps directly, as the
//     semantic equality does;
//  3. compares the remaining fields with apiequality.Semantic one by one,
//     the top level's struct fields split once more, the fields of the
//     lightest types first (a pod's conditions and managedFields before its
//     containers), among equals the last declared first (status before
//     spec before metadata).
//
// Two equal objects cost one complete walk, as before; a change costs a
// walk up to the first field found to differ. Types it cannot split safely
// (not a pointer to a struct, an unexported field, a type with its own
// registered equality) are compared whole by apiequality.Semantic.
package semantic

import (
	"cmp"
	"reflect"
	"slices"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// splitDepth is how many struct levels the comparer splits into fields.
const splitDepth = 2

// Comparer is apiequality.Semantic.DeepEqual that finds a difference
// early. It caches, per object type, the plan of its comparison; the zero
// value is ready to use, and it is safe for concurrent use.
type Comparer struct {
	plans sync.Map // reflect.Type (struct) → *plan; nil *plan: compare whole
}

// plan lists the leaves of a struct type split splitDepth levels deep, as
// index paths from the object's struct.
type plan struct {
	scalars [][]int // compared with == (exported string, int, uint, bool kinds)
	deep    []leaf  // compared with apiequality.Semantic, lightest type first
}

// leaf is a field compared with apiequality.Semantic.
type leaf struct {
	path []int
	// custom: the field's type has its own registered equality, which
	// always decides, even for nil or empty values.
	custom bool
}

// Equal reports apiequality.Semantic.DeepEqual(a, b). Values that are not
// non-nil pointers to structs of one type are handed to it as they are.
func (c *Comparer) Equal(a, b any) bool {
	x, y := reflect.ValueOf(a), reflect.ValueOf(b)
	if x.Kind() != reflect.Pointer || !y.IsValid() || x.Type() != y.Type() || x.IsNil() || y.IsNil() {
		return apiequality.Semantic.DeepEqual(a, b)
	}
	if x.Pointer() == y.Pointer() {
		return true
	}
	p := c.planFor(x.Type().Elem())
	if p == nil {
		return apiequality.Semantic.DeepEqual(a, b)
	}
	x, y = x.Elem(), y.Elem()
	for _, path := range p.scalars {
		if scalarDiffers(x.FieldByIndex(path), y.FieldByIndex(path)) {
			return false
		}
	}
	for _, l := range p.deep {
		f, g := x.FieldByIndex(l.path), y.FieldByIndex(l.path)
		if equal, known := emptyEqual(f, g); known && !l.custom {
			if !equal {
				return false
			}
			continue
		}
		if !apiequality.Semantic.DeepEqual(f.Addr().Interface(), g.Addr().Interface()) {
			return false
		}
	}
	return true
}

// scalarDiffers compares two values of a kind the plan lists as scalar.
func scalarDiffers(x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.String:
		return x.String() != y.String()
	case reflect.Bool:
		return x.Bool() != y.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() != y.Int()
	default: // unsigned integers
		return x.Uint() != y.Uint()
	}
}

// planFor returns the plan of struct type t, nil when t must be compared
// whole.
func (c *Comparer) planFor(t reflect.Type) *plan {
	if p, ok := c.plans.Load(t); ok {
		return p.(*plan)
	}
	b := planner{weights: map[reflect.Type]int{}}
	p := &plan{}
	if !b.split(p, t, nil, splitDepth) {
		p = nil
	} else {
		slices.SortStableFunc(p.deep, func(x, y leaf) int {
			return cmp.Compare(b.weight(t.FieldByIndex(x.path).Type), b.weight(t.FieldByIndex(y.path).Type))
		})
	}
	c.plans.Store(t, p)
	return p
}

// planner builds one plan.
type planner struct {
	weights map[reflect.Type]int // memo of weight; -1 while being computed
}

// split adds the leaves of struct type t, at path, to p: depth levels of
// struct fields are split, last declared first. It fails when t has an
// unexported field or its own registered equality.
func (b *planner) split(p *plan, t reflect.Type, path []int, depth int) bool {
	if t.Kind() != reflect.Struct || registered(t) {
		return false
	}
	for i := t.NumField() - 1; i >= 0; i-- {
		f := t.Field(i)
		if !f.IsExported() {
			return false
		}
	}
	at := func(i int) []int { return append(slices.Clip(path), i) }
	for i := t.NumField() - 1; i >= 0; i-- {
		ft := t.Field(i).Type
		switch {
		case registered(ft):
			p.deep = append(p.deep, leaf{path: at(i), custom: true})
		case isScalar(ft.Kind()):
			p.scalars = append(p.scalars, at(i))
		case ft.Kind() == reflect.Struct && depth > 1:
			sub := &plan{}
			if b.split(sub, ft, at(i), depth-1) {
				p.scalars = append(p.scalars, sub.scalars...)
				p.deep = append(p.deep, sub.deep...)
			} else {
				p.deep = append(p.deep, leaf{path: at(i)})
			}
		default:
			p.deep = append(p.deep, leaf{path: at(i)})
		}
	}
	return true
}

func isScalar(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// weight estimates the cost of comparing a value of type t: the number of
// fields its type reaches. Slices count as one element, recursive and
// interface types as heavy.
func (b *planner) weight(t reflect.Type) int {
	const heavy = 1000
	if w, ok := b.weights[t]; ok {
		if w < 0 {
			return heavy
		}
		return w
	}
	if registered(t) {
		return 1
	}
	b.weights[t] = -1
	w := 1
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			w += b.weight(t.Field(i).Type)
		}
	case reflect.Pointer, reflect.Slice, reflect.Array:
		w += b.weight(t.Elem())
	case reflect.Map:
		w += b.weight(t.Key()) + b.weight(t.Elem())
	case reflect.Interface:
		w = heavy
	}
	b.weights[t] = min(w, heavy)
	return b.weights[t]
}

// registered reports whether apiequality.Semantic has its own equality
// for t: such values are only ever compared whole, by that function.
func registered(t reflect.Type) bool {
	_, ok := apiequality.Semantic.Equalities[t]
	return ok
}

// emptyEqual answers for a pointer, slice or map of a type without a
// registered equality when either side is nil or empty, as
// apiequality.Semantic does: two nil pointers are equal, a nil and a
// non-nil one differ; nil and empty slices and maps are alike. known is
// false when both sides hold something to compare.
func emptyEqual(x, y reflect.Value) (equal, known bool) {
	switch x.Kind() {
	case reflect.Pointer:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil(), true
		}
	case reflect.Slice, reflect.Map:
		if x.Len() == 0 || y.Len() == 0 {
			return x.Len() == y.Len(), true
		}
	}
	return false, false
}
