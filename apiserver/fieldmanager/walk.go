package fieldmanager

import (
	"errors"
	"reflect"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// This file computes what the merge library's Compare(live, new) reports —
// the fields new adds or modifies and the fields it removes, minus the
// fields the subresource resets — straight from the Go values, without
// building typed values, validating them in separate passes or zipping two
// reflected objects through the generic value API. A create compares the
// new object with an empty one (createfields.go), an update with the live
// object (updatefields.go).
//
// It mirrors structured-merge-diff's compare walker (typed/compare.go) and
// validating walker (typed/validate.go) rule for rule, and reads Go values
// through the library's own reflection cache (value.TypeReflectEntryOf:
// json names, inlining, omitempty/omitzero, UnstructuredConverter and
// json.Marshaler types), so both see the same fields. Whenever it meets
// something it does not handle exactly like the library — a schema type
// with more than one atom, an invalid value, a list item without a key —
// it gives up with errSlowPath and the caller takes the library's path,
// which then decides (and fails or succeeds) as before. The tests compare
// both paths on tables of objects and writes and on random ones.
//
// Three departures from the library's order of work, none visible in the
// result: the fields of the reset set (kube-apiserver's ignore filter) are
// compared and validated but never inserted, instead of being inserted and
// filtered out afterwards; the live object's managedFields, which every
// update removes, are recorded as removed without being converted (the
// caller has checked them: see updateFields); and the top fields of both
// objects are first checked for equality as Go values, in which case the
// comparison (which would find nothing) is skipped and one of them
// validated.

// errSlowPath: the fast computation does not cover this object.
var errSlowPath = errors.New("fieldmanager: object needs the structured-merge-diff path")

// setBuilder inserts paths into a set. nodes[i] is the set node of
// path[:i] once a path below it has been inserted (nodes[0] is set), so
// that an insert does not walk from the root; the walker truncates it
// when it leaves a path.
type setBuilder struct {
	set   *fieldpath.Set
	nodes []*fieldpath.Set
}

// insert adds path to the set, as set.Insert(path) would; a nil set
// records nothing.
func (b *setBuilder) insert(path fieldpath.Path) {
	if len(path) == 0 || b.set == nil {
		return
	}
	if len(b.nodes) == 0 {
		b.nodes = append(b.nodes, b.set)
	}
	last := len(path) - 1
	for i := len(b.nodes) - 1; i < last; i++ {
		b.nodes = append(b.nodes, b.nodes[i].Children.Descend(path[i]))
	}
	b.nodes[last].Members.Insert(path[last])
}

func (b *setBuilder) truncate(depth int) {
	if len(b.nodes) > depth+1 {
		b.nodes = b.nodes[:depth+1]
	}
}

// walker collects the changed (added or modified) and removed fields of
// rhs against lhs.
type walker struct {
	plans   *structPlans
	changed setBuilder
	removed setBuilder // set nil: removals are not recorded (creates)
	path    fieldpath.Path
	// exclude[i] is the node of the reset set at path[:i], nil when
	// nothing below is reset; skip > 0 while inside a reset subtree (the
	// depth it starts at): its fields are compared but not recorded.
	exclude []*fieldpath.Set
	skip    int
	// buf holds the items of the lists being compared, as a stack.
	buf []listItem
	// rec, when set (creates), gets the changed paths instead of changed
	// (see shape.go).
	rec *shapeRecorder
}

// newWalker returns a walker over the schema of plans that never records
// the fields of reset (nil: none) and records removals only when
// withRemoved.
func newWalker(plans *structPlans, reset *fieldpath.Set, withRemoved bool) *walker {
	w := &walker{plans: plans, changed: setBuilder{set: &fieldpath.Set{}}}
	if withRemoved {
		w.removed.set = &fieldpath.Set{}
	}
	w.exclude = append(w.exclude, reset)
	return w
}

// push descends to child pe; pop returns to the parent.
func (w *walker) push(pe fieldpath.PathElement) {
	parent := w.exclude[len(w.path)]
	w.path = append(w.path, pe)
	var child *fieldpath.Set
	if parent != nil && w.skip == 0 {
		if parent.Members.Has(pe) {
			w.skip = len(w.path)
		} else {
			child, _ = parent.Children.Get(pe)
		}
	}
	w.exclude = append(w.exclude, child)
}

func (w *walker) pop() {
	if w.skip == len(w.path) {
		w.skip = 0
	}
	w.path = w.path[:len(w.path)-1]
	w.exclude = w.exclude[:len(w.path)+1]
	w.changed.truncate(len(w.path))
	w.removed.truncate(len(w.path))
	if w.rec != nil {
		w.rec.truncate(len(w.path))
	}
}

// addChanged and addRemoved record the current path.
func (w *walker) addChanged() {
	switch {
	case w.skip != 0:
	case w.rec != nil:
		w.rec.record(w.path)
	default:
		w.changed.insert(w.path)
	}
}

func (w *walker) addRemoved() {
	if w.skip == 0 {
		w.removed.insert(w.path)
	}
}

// maybe is a node or, when !ok, an absent value (a null value is a node
// of kind kNull).
type maybe struct {
	node
	ok bool
}

// some returns n as present.
func some(n node) maybe { return maybe{node: n, ok: true} }

// present reports whether m is a value other than null.
func (m maybe) present() bool { return m.ok && m.k != kNull }

// compare mirrors compareWalker.compare for a value of type a (see
// atomOf); lhs and rhs are not both absent.
func (w *walker) compare(a smdschema.Atom, lhs, rhs maybe) error {
	if a.Scalar == nil && lhs.ok && rhs.ok && w.shortcut() && sameValue(lhs.node, rhs.node) {
		// Equal values: nothing changed below, and what the library
		// validates twice is valid if one of them is.
		return w.validate(a, rhs.node)
	}
	var err error
	leaf := false
	switch {
	case a.Scalar != nil:
		if (lhs.ok && !scalarValid(*a.Scalar, lhs.node)) || (rhs.ok && !scalarValid(*a.Scalar, rhs.node)) {
			return errSlowPath // validation fails
		}
		leaf = true
		err = w.doLeaf(lhs, rhs)
	case a.List != nil:
		leaf, err = w.doList(a.List, lhs, rhs)
	default:
		leaf, err = w.doMap(a.Map, lhs, rhs)
	}
	if err != nil || leaf {
		return err
	}
	switch {
	case !lhs.ok:
		w.addChanged()
	case !rhs.ok:
		w.addRemoved()
	}
	return nil
}

// shortcut reports whether the walk first checks the values at the path
// for equality with reflect.DeepEqual: the fields of the object and theirs
// (spec, status, metadata.labels, status.conditions, ...), most of which
// an update leaves as they are. Not deeper, where the check would mostly
// repeat the one above; not metadata, whose managedFields the library
// does not compare.
func (w *walker) shortcut() bool {
	switch len(w.path) {
	case 1:
		return *w.path[0].FieldName != "metadata"
	case 2:
		return true
	}
	return false
}

// sameValue reports whether two nodes hold equal Go values.
func sameValue(l, r node) bool {
	if l.k != r.k || l.k == kScalar || !l.v.CanAddr() || !r.v.CanAddr() || !l.v.CanInterface() || !r.v.CanInterface() {
		return false
	}
	return reflect.DeepEqual(l.v.Addr().Interface(), r.v.Addr().Interface())
}

// doLeaf records the path as added, removed or modified.
func (w *walker) doLeaf(lhs, rhs maybe) error {
	switch {
	case !lhs.ok:
		w.addChanged()
	case !rhs.ok:
		w.addRemoved()
	default:
		eq, err := nodeEqual(lhs.node, rhs.node)
		if err != nil {
			return err
		}
		if !eq {
			w.addChanged()
		}
	}
	return nil
}

// doMap mirrors compareWalker.doMap; it reports whether the map was a leaf.
func (w *walker) doMap(t *smdschema.Map, lhs, rhs maybe) (bool, error) {
	if (lhs.present() && !lhs.isMap()) || (rhs.present() && !rhs.isMap()) {
		return false, errSlowPath
	}
	lempty := !lhs.present() || lhs.empty()
	rempty := !rhs.present() || rhs.empty()
	if t.ElementRelationship == smdschema.Atomic || (lempty && rempty) {
		for _, n := range [2]maybe{lhs, rhs} {
			if n.ok {
				if err := w.validate(smdschema.Atom{Map: t}, n.node); err != nil {
					return true, err
				}
			}
		}
		return true, w.doLeaf(lhs, rhs)
	}
	if (lhs.k == kStruct || !lhs.present()) && (rhs.k == kStruct || !rhs.present()) &&
		(!lhs.present() || !rhs.present() || lhs.v.Type() == rhs.v.Type()) {
		// Structs of one type: their fields in the library's order, with
		// the schema resolved once per type.
		var l, r maybe
		if lhs.present() {
			l = lhs
		}
		if rhs.present() {
			r = rhs
		}
		typ := l.v
		if !l.ok {
			typ = r.v
		}
		plan := w.plans.of(typ.Type(), t)
		return false, zipStructs(l, r, func(i int, key *string, l, r maybe) error {
			if w.special(key, l) {
				return nil
			}
			if plan[i].err != nil {
				return plan[i].err
			}
			return w.visit(key, plan[i].atom, l, r)
		})
	}
	visit := func(key *string, l, r maybe) error {
		if w.special(key, l) {
			return nil
		}
		a, err := w.plans.fieldAtom(t, *key)
		if err != nil {
			return err
		}
		return w.visit(key, a, l, r)
	}
	switch {
	case !lhs.present():
		return false, w.entries(rhs.node, func(key *string, c node) error { return visit(key, maybe{}, some(c)) })
	case !rhs.present():
		return false, lhs.each(func(key *string, c node) error { return visit(key, some(c), maybe{}) })
	}
	err := lhs.each(func(key *string, l node) error {
		r, ok, err := rhs.get(*key)
		if err != nil {
			return err
		}
		return visit(key, some(l), maybe{node: r, ok: ok})
	})
	if err != nil {
		return false, err
	}
	return false, rhs.each(func(key *string, r node) error {
		if _, ok, err := lhs.get(*key); ok || err != nil {
			return err
		}
		return visit(key, maybe{}, some(r))
	})
}

// special handles the fields the library sees differently from the Go
// values, and reports whether key was one.
func (w *walker) special(key *string, l maybe) bool {
	switch {
	case len(w.path) == 0 && (*key == "apiVersion" || *key == "kind"):
		// Both objects carry the kind's apiVersion and kind once
		// converted to its version: equal, never recorded.
		return true
	case len(w.path) == 1 && *key == "managedFields" && *w.path[0].FieldName == "metadata":
		// The library compares new without managedFields: live's are
		// removed, new's absent.
		if l.ok {
			w.push(fieldpath.PathElement{FieldName: key})
			w.addRemoved()
			w.pop()
		}
		return true
	}
	return false
}

// visit compares the entry key, of type a, of a map.
func (w *walker) visit(key *string, a smdschema.Atom, l, r maybe) error {
	w.push(fieldpath.PathElement{FieldName: key})
	err := w.compare(a, l, r)
	w.pop()
	return err
}

// zipStructs calls fn, with the field's index in the reflection cache's
// order, for the fields of two structs of one type (or one struct and an
// absent value) that either serializes (an omitted one is absent).
func zipStructs(l, r maybe, fn func(i int, key *string, l, r maybe) error) error {
	typ := l.v
	if !l.ok {
		typ = r.v
	}
	for i, f := range value.TypeReflectEntryOf(typ.Type()).OrderedFields() {
		var lc, rc maybe
		var err error
		if l.ok {
			if lv := f.GetFrom(l.v); !f.CanOmit(lv) {
				if lc.node, err = wrap(lv, f.TypeEntry); err != nil {
					return err
				}
				lc.ok = true
			}
		}
		if r.ok {
			if rv := f.GetFrom(r.v); !f.CanOmit(rv) {
				if rc.node, err = wrap(rv, f.TypeEntry); err != nil {
					return err
				}
				rc.ok = true
			}
		}
		if !lc.ok && !rc.ok {
			continue
		}
		if err := fn(i, &f.JsonName, lc, rc); err != nil {
			return err
		}
	}
	return nil
}
