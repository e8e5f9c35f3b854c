package fieldmanager

import (
	"errors"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// This file computes, for a create, the field set the merge library's
// Compare(empty object, new object) reports as added or modified — the set
// an Update with no live object gives its manager — straight from the Go
// values, without building typed values, validating them in a separate
// pass or zipping two reflected objects through the generic value API.
//
// It mirrors structured-merge-diff's compare walker (typed/compare.go) and
// validating walker (typed/validate.go) rule for rule, and reads Go values
// through the library's own reflection cache (value.TypeReflectEntryOf:
// json names, inlining, omitempty/omitzero, UnstructuredConverter and
// json.Marshaler types), so both see the same fields. Whenever it meets
// something it does not handle exactly like the library — a schema type
// with more than one atom, an invalid value, a list item without a key,
// two non-empty containers to compare — it gives up with errSlowPath and
// the caller takes the library's path, which then decides (and fails or
// succeeds) as before. createfields_test.go compares both paths on a table
// of objects and on random ones.

// errSlowPath: the fast computation does not cover this object.
var errSlowPath = errors.New("fieldmanager: object needs the structured-merge-diff path")

// createWalker collects the added and modified fields of new against lhs.
type createWalker struct {
	schema *smdschema.Schema
	set    *fieldpath.Set
	path   fieldpath.Path
	// nodes[i] is the set node of path[:i] once a path below it has been
	// inserted (nodes[0] is set): Set.Insert without walking from the root.
	nodes []*fieldpath.Set
}

// atom resolves tr to a schema atom with exactly one of scalar, list, map:
// then deducing the atom from a value, as the library does first, cannot
// change it.
func (w *createWalker) atom(tr smdschema.TypeRef) (smdschema.Atom, error) {
	a, ok := w.schema.Resolve(tr)
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

// insert adds the current path to the set, as set.Insert(path) would.
func (w *createWalker) insert() {
	if len(w.path) == 0 {
		return
	}
	if len(w.nodes) == 0 {
		w.nodes = append(w.nodes, w.set)
	}
	last := len(w.path) - 1
	for i := len(w.nodes) - 1; i < last; i++ {
		w.nodes = append(w.nodes, w.nodes[i].Children.Descend(w.path[i]))
	}
	w.nodes[last].Members.Insert(w.path[last])
}

// push descends to child pe; pop returns to the parent.
func (w *createWalker) push(pe fieldpath.PathElement) { w.path = append(w.path, pe) }

func (w *createWalker) pop() {
	w.path = w.path[:len(w.path)-1]
	if len(w.nodes) > len(w.path)+1 {
		w.nodes = w.nodes[:len(w.path)+1]
	}
}

// compare mirrors compareWalker.compare for the added and modified sets;
// lhs nil means absent. rhs must not be nil.
func (w *createWalker) compare(tr smdschema.TypeRef, lhs *node, rhs node) error {
	a, err := w.atom(tr)
	if err != nil {
		return err
	}
	leaf := false
	switch {
	case a.Scalar != nil:
		err = w.doScalar(*a.Scalar, lhs, rhs)
		leaf = true
	case a.List != nil:
		leaf, err = w.doList(a.List, lhs, rhs)
	default:
		leaf, err = w.doMap(a.Map, lhs, rhs)
	}
	if err != nil {
		return err
	}
	if !leaf && lhs == nil {
		w.insert()
	}
	return nil
}

// doLeaf inserts the path when rhs is new or differs from lhs.
func (w *createWalker) doLeaf(lhs *node, rhs node) error {
	if lhs == nil {
		w.insert()
		return nil
	}
	eq, err := leafEqual(*lhs, rhs)
	if err != nil {
		return err
	}
	if !eq {
		w.insert()
	}
	return nil
}

// leafEqual is value.Equals for the cases the walker meets: scalars, nulls
// and empty containers. Two non-empty containers are left to the library.
func leafEqual(l, r node) (bool, error) {
	switch {
	case l.k == kNull || r.k == kNull:
		return l.k == r.k, nil
	case l.isScalar() && r.isScalar():
		return value.Equals(l.scalar(), r.scalar()), nil
	case l.isMap() && r.isMap(), l.isList() && r.isList():
		le, re := l.empty(), r.empty()
		if le || re {
			return le && re, nil // one empty: lengths differ
		}
	case l.isScalar() != r.isScalar() || l.isMap() != r.isMap() || l.isList() != r.isList():
		return false, nil
	}
	return false, errSlowPath
}

func (w *createWalker) doScalar(t smdschema.Scalar, lhs *node, rhs node) error {
	if !scalarValid(t, rhs) {
		return errSlowPath
	}
	return w.doLeaf(lhs, rhs)
}

// scalarValid mirrors validateScalar.
// doList mirrors compareWalker.doList; it reports whether the list was a leaf.
func (w *createWalker) doList(t *smdschema.List, lhs *node, rhs node) (bool, error) {
	if rhs.k != kNull && rhs.k != kList {
		return false, errSlowPath // invalid: validation fails
	}
	if lhs != nil && lhs.k == kList && !lhs.empty() {
		return false, errSlowPath // only an empty object's lists are covered
	}
	rlen := 0
	if rhs.k == kList {
		rlen = rhs.v.Len()
	}
	if t.ElementRelationship == smdschema.Atomic || rlen == 0 {
		if err := w.validateItems(t, rhs); err != nil {
			return true, err
		}
		return true, w.doLeaf(lhs, rhs)
	}
	if t.ElementRelationship != smdschema.Associative {
		return false, errSlowPath
	}
	pes := make([]fieldpath.PathElement, rlen)
	for i := range rlen {
		item, err := wrap(rhs.v.Index(i), nil)
		if err != nil {
			return false, err
		}
		if pes[i], err = w.itemElement(t, item); err != nil {
			return false, err
		}
	}
	first := firstOccurrences(pes)
	for i := range rlen {
		item, _ := wrap(rhs.v.Index(i), nil)
		w.push(pes[i])
		var err error
		switch {
		case first[i] == i && !duplicated(first, i):
			err = w.compare(t.ElementType, nil, item)
		default:
			// Duplicates: the library records the item and does not
			// descend, but validation still visits every copy.
			if first[i] == i {
				w.insert()
			}
			err = w.validate(t.ElementType, item)
		}
		w.pop()
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// firstOccurrences returns, for each path element, the index of the first
// equal one.
func firstOccurrences(pes []fieldpath.PathElement) []int {
	first := make([]int, len(pes))
	if len(pes) <= 16 {
		for i := range pes {
			first[i] = i
			for j := range i {
				if first[j] == j && pes[j].Equals(pes[i]) {
					first[i] = j
					break
				}
			}
		}
		return first
	}
	seen := make(map[string]int, len(pes))
	for i, pe := range pes {
		k := pe.String()
		if j, ok := seen[k]; ok {
			first[i] = j
			continue
		}
		seen[k] = i
		first[i] = i
	}
	return first
}

// duplicated reports whether a later element equals element i.
func duplicated(first []int, i int) bool {
	for j := i + 1; j < len(first); j++ {
		if first[j] == i {
			return true
		}
	}
	return false
}

// itemElement mirrors listItemToPathElement for an associative list.
func (w *createWalker) itemElement(t *smdschema.List, item node) (fieldpath.PathElement, error) {
	if len(t.Keys) == 0 {
		if !item.isScalar() {
			return fieldpath.PathElement{}, errSlowPath
		}
		v := item.scalar()
		return fieldpath.PathElement{Value: &v}, nil
	}
	if !item.isMap() {
		return fieldpath.PathElement{}, errSlowPath
	}
	keys := make(value.FieldList, 0, len(t.Keys))
	for _, name := range t.Keys {
		kv, ok, err := item.get(name)
		if err != nil {
			return fieldpath.PathElement{}, err
		}
		if ok {
			if !kv.isScalar() {
				return fieldpath.PathElement{}, errSlowPath
			}
			keys = append(keys, value.Field{Name: name, Value: kv.scalar()})
			continue
		}
		a, ok := w.schema.Resolve(t.ElementType)
		if !ok || a.Map == nil {
			return fieldpath.PathElement{}, errSlowPath
		}
		if f, _ := a.Map.FindField(name); f.Default != nil {
			keys = append(keys, value.Field{Name: name, Value: value.NewValueInterface(f.Default)})
		}
	}
	if len(keys) == 0 {
		return fieldpath.PathElement{}, errSlowPath
	}
	keys.Sort()
	return fieldpath.PathElement{Key: &keys}, nil
}

// doMap mirrors compareWalker.doMap; it reports whether the map was a leaf.
func (w *createWalker) doMap(t *smdschema.Map, lhs *node, rhs node) (bool, error) {
	if rhs.k != kNull && !rhs.isMap() {
		return false, errSlowPath
	}
	if lhs != nil && lhs.k != kNull && !lhs.isMap() {
		return false, errSlowPath
	}
	rempty := rhs.k == kNull || rhs.empty()
	lempty := lhs == nil || lhs.k == kNull || lhs.empty()
	if t.ElementRelationship == smdschema.Atomic || (rempty && lempty) {
		if err := w.validate(smdschema.TypeRef{Inlined: smdschema.Atom{Map: t}}, rhs); err != nil {
			return true, err
		}
		return true, w.doLeaf(lhs, rhs)
	}
	// The library zips both maps; entries only lhs has are removals,
	// which a create's manager set does not contain.
	err := rhs.each(func(keyp *string, child node) error {
		key := *keyp
		if len(w.path) == 0 && (key == "apiVersion" || key == "kind") {
			// Both objects carry the kind's apiVersion and kind once
			// converted to its version: equal, never recorded.
			return nil
		}
		tr := t.ElementType
		if f, ok := t.FindField(key); ok {
			tr = f.Type
		} else if (tr == smdschema.TypeRef{}) {
			return errSlowPath // validation: field not declared in schema
		}
		var lv *node
		if lhs != nil && lhs.k != kNull {
			l, ok, err := lhs.get(key)
			if err != nil {
				return err
			}
			if ok {
				lv = &l
			}
		}
		w.push(fieldpath.PathElement{FieldName: keyp})
		err := w.compare(tr, lv, child)
		w.pop()
		return err
	})
	return false, err
}

// validate mirrors the validating walker for a subtree the comparison does
// not descend into (atomic containers, duplicate list items).
