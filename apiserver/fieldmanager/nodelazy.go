package fieldmanager

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Timestamps and quantities in the walk. The library turns a metav1.Time
// into its RFC 3339 string (Time.ToUnstructured), a MicroTime into its
// microsecond string by a JSON round trip (MarshalJSON), both null when
// zero, and a resource.Quantity into its canonical string
// (Quantity.ToUnstructured), allocating every time. Most of what the walk
// does with such a value is to see that it is there: a create records it,
// an update first compares the whole struct or map holding it. So these
// values become nodes of kind kTime, kMicroTime or kQuantity that make the
// library's string only when it is compared or written into a path.

var (
	timeType         = reflect.TypeFor[metav1.Time]()
	timePtrType      = reflect.TypeFor[*metav1.Time]()
	microTimeType    = reflect.TypeFor[metav1.MicroTime]()
	microTimePtrType = reflect.TypeFor[*metav1.MicroTime]()
	quantityType     = reflect.TypeFor[resource.Quantity]()
	quantityPtrType  = reflect.TypeFor[*resource.Quantity]()
)

// wrapLazy is wrap of a Time, MicroTime or Quantity, or a pointer to one
// (v of type t); ok is false for other values, and for one it cannot read
// without copying (wrap then goes the library's way).
func wrapLazy(v reflect.Value, t reflect.Type) (n node, ok bool) {
	if k := t.Kind(); k != reflect.Struct && k != reflect.Pointer {
		return node{}, false
	}
	if t == timePtrType || t == microTimePtrType || t == quantityPtrType {
		if !v.CanInterface() {
			return node{}, false
		}
		if v.IsNil() {
			return node{k: kNull}, true
		}
		v = v.Elem()
		t = v.Type()
	}
	if (t != timeType && t != microTimeType && t != quantityType) || !v.CanAddr() || !v.CanInterface() {
		return node{}, false
	}
	switch p := v.Addr().Interface().(type) {
	case *metav1.Time:
		if p.IsZero() {
			return node{k: kNull}, true
		}
		return node{k: kTime, v: v}, true
	case *metav1.MicroTime:
		if p.IsZero() {
			return node{k: kNull}, true
		}
		return node{k: kMicroTime, v: v}, true
	}
	return node{k: kQuantity, v: v}, true
}

// lazyString is the string the library makes of a kTime, kMicroTime or
// kQuantity node.
func (n node) lazyString() string {
	switch p := n.v.Addr().Interface().(type) {
	case *metav1.Time:
		return p.UTC().Format(time.RFC3339)
	case *metav1.MicroTime:
		return p.UTC().Format(metav1.RFC3339Micro)
	case *resource.Quantity:
		q := *p // String caches the string in its receiver: not in the object
		return q.String()
	}
	return ""
}
