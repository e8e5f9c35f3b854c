package fieldmanager

import (
	"encoding/base64"
	"reflect"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Values as the walk (walk.go) sees them: the library's reflected values,
// rebuilt from its exported reflection cache without allocating a Value
// per field, and compared as value.Equals compares them.

type nodeKind uint8

const (
	kNull   nodeKind = iota
	kMap             // Go map (string keys)
	kStruct          // struct: a map of its json fields
	kList
	kInt
	kUint
	kFloat
	kString
	kBytes // []byte: a base64 string
	kBool
	kScalar    // a scalar produced by an UnstructuredConverter or json.Marshaler
	kTime      // a non-zero metav1.Time: an RFC 3339 string (nodelazy.go)
	kMicroTime // a non-zero metav1.MicroTime: an RFC 3339 string with microseconds
	kQuantity  // a resource.Quantity: its canonical string
)

// node is a value as the library wraps it; u holds converted scalars.
type node struct {
	k nodeKind
	v reflect.Value
	u any
}

func (n node) isScalar() bool { return n.k >= kInt }

// entry returns the reflection cache entry of a struct or map node's type.
func (n node) entry() *value.TypeReflectCacheEntry { return value.TypeReflectEntryOf(n.v.Type()) }

// wrap turns a Go value into a node by the library's rules (valueReflect.reuse).
func wrap(v reflect.Value, e *value.TypeReflectCacheEntry) (node, error) {
	t := v.Type()
	if t == intOrStringType && v.CanInterface() {
		return wrapIntOrString(v.Interface().(intstr.IntOrString))
	}
	if n, ok := wrapLazy(v, t); ok {
		return n, nil
	}
	if e == nil {
		e = value.TypeReflectEntryOf(t)
	}
	if e.CanConvertToUnstructured() {
		u, err := e.ToUnstructured(v)
		if err != nil {
			return node{}, errSlowPath
		}
		switch u.(type) {
		case nil:
			return node{k: kNull}, nil
		case string, bool, int64, float64:
			return node{k: kScalar, u: u}, nil
		default:
			return node{}, errSlowPath
		}
	}
	if k := v.Kind(); (k == reflect.Interface || k == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Map:
		if v.IsNil() {
			return node{k: kNull}, nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return node{}, errSlowPath
		}
		return node{k: kMap, v: v}, nil
	case reflect.Struct:
		return node{k: kStruct, v: v}, nil
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8:
		return node{k: kInt, v: v}, nil
	case reflect.Uint, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return node{k: kUint, v: v}, nil
	case reflect.Float64, reflect.Float32:
		return node{k: kFloat, v: v}, nil
	case reflect.String:
		return node{k: kString, v: v}, nil
	case reflect.Bool:
		return node{k: kBool, v: v}, nil
	case reflect.Slice:
		if v.IsNil() {
			return node{k: kNull}, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return node{k: kBytes, v: v}, nil
		}
		return node{k: kList, v: v}, nil
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return node{k: kNull}, nil
		}
	}
	return node{}, errSlowPath
}

var intOrStringType = reflect.TypeFor[intstr.IntOrString]()

// wrapIntOrString is wrap of an IntOrString without its JSON round trip:
// an int or a string (JSON would replace invalid UTF-8: left to the
// library).
func wrapIntOrString(v intstr.IntOrString) (node, error) {
	switch {
	case v.Type == intstr.Int:
		return node{k: kScalar, u: int64(v.IntVal)}, nil
	case v.Type == intstr.String && utf8.ValidString(v.StrVal):
		return node{k: kScalar, u: v.StrVal}, nil
	}
	return node{}, errSlowPath
}

// scalar returns a scalar node's value as the library's Value.
func (n node) scalar() value.Value {
	switch n.k {
	case kScalar:
		return value.NewValueInterface(n.u)
	case kTime, kMicroTime, kQuantity:
		return value.NewValueInterface(n.lazyString())
	case kInt:
		return value.NewValueInterface(n.v.Int())
	case kUint:
		return value.NewValueInterface(int64(n.v.Uint()))
	case kFloat:
		return value.NewValueInterface(n.v.Float())
	case kString:
		return value.NewValueInterface(n.v.String())
	case kBytes:
		return value.NewValueInterface(base64.StdEncoding.EncodeToString(n.v.Bytes()))
	case kBool:
		return value.NewValueInterface(n.v.Bool())
	}
	return value.NewValueInterface(nil)
}

// isMap, isList and empty follow valueReflect's IsMap, IsList and
// Map.Empty / List.Length.
func (n node) isMap() bool  { return n.k == kMap || n.k == kStruct }
func (n node) isList() bool { return n.k == kList }

// each calls fn for the entries of a map node, as the library iterates
// them. key points to a string that is never modified: a struct field's
// json name in the library's reflection cache, or a map key.
func (n node) each(fn func(key *string, child node) error) error {
	switch n.k {
	case kStruct:
		for _, f := range value.TypeReflectEntryOf(n.v.Type()).OrderedFields() {
			fv := f.GetFrom(n.v)
			if f.CanOmit(fv) {
				continue
			}
			c, err := wrap(fv, f.TypeEntry)
			if err != nil {
				return err
			}
			if err := fn(&f.JsonName, c); err != nil {
				return err
			}
		}
	case kMap:
		// The entries are read into two reused values: a child node is
		// only valid during fn.
		t := n.v.Type()
		e := value.TypeReflectEntryOf(t.Elem())
		kv, vv := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		for it := n.v.MapRange(); it.Next(); {
			kv.SetIterKey(it)
			vv.SetIterValue(it)
			c, err := wrap(vv, e)
			if err != nil {
				return err
			}
			k := kv.String()
			if err := fn(&k, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// empty reports whether a map or list node has no entries (a struct none
// that is serialized).
func (n node) empty() bool {
	switch n.k {
	case kList, kMap:
		return n.v.Len() == 0
	case kStruct:
		for _, f := range value.TypeReflectEntryOf(n.v.Type()).OrderedFields() {
			if !f.CanOmit(f.GetFrom(n.v)) {
				return false
			}
		}
	}
	return true
}

// get returns the entry key of a map node (structReflect.Get / mapReflect.Get).
func (n node) get(key string) (node, bool, error) {
	switch n.k {
	case kStruct:
		f, ok := value.TypeReflectEntryOf(n.v.Type()).Fields()[key]
		if !ok {
			return node{}, false, nil
		}
		fv := f.GetFrom(n.v)
		if f.CanOmit(fv) {
			return node{}, false, nil
		}
		c, err := wrap(fv, nil)
		return c, true, err
	case kMap:
		kv := reflect.New(n.v.Type().Key()).Elem()
		kv.SetString(key)
		v := n.v.MapIndex(kv)
		if !v.IsValid() {
			return node{}, false, nil
		}
		c, err := wrap(v, nil)
		return c, true, err
	}
	return node{}, false, nil
}

// length is the number of entries of a map or list node (Map.Length,
// List.Length).
func (n node) length() int {
	switch n.k {
	case kList, kMap:
		return n.v.Len()
	case kStruct:
		l := 0
		for _, f := range value.TypeReflectEntryOf(n.v.Type()).OrderedFields() {
			if !f.CanOmit(f.GetFrom(n.v)) {
				l++
			}
		}
		return l
	}
	return 0
}

// item returns the i-th item of a list node.
func (n node) item(i int) (node, error) { return wrap(n.v.Index(i), nil) }
