package fieldmanager

import (
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Validation in the walk: the checks of the library's validating
// walker (typed/validate.go) that its comparison does not make itself.
// Anything that would fail validation sends the object down the library's
// path, which then fails (or not) exactly as before.

// scalarValid mirrors validateScalar.
func scalarValid(t smdschema.Scalar, n node) bool {
	if n.k == kNull {
		return true
	}
	c := n.class()
	switch t {
	case smdschema.Numeric:
		return c == cFloat || c == cInt
	case smdschema.String:
		return c == cString
	case smdschema.Boolean:
		return c == cBool
	case smdschema.Untyped:
		return c != cNone
	}
	return false
}

// validate mirrors the validating walker, for a value of type a (see
// atomOf), for a subtree the comparison does not descend into (atomic
// containers, duplicate list items).
func (w *walker) validate(a smdschema.Atom, n node) error {
	switch {
	case a.Scalar != nil:
		if !scalarValid(*a.Scalar, n) {
			return errSlowPath
		}
		return nil
	case a.List != nil:
		if n.k != kNull && n.k != kList {
			return errSlowPath
		}
		return w.validateItems(a.List, n)
	}
	if n.k == kNull {
		return nil
	}
	if !n.isMap() {
		return errSlowPath
	}
	t := a.Map
	if n.k == kStruct {
		plan := w.plans.of(n.v.Type(), t)
		return zipStructs(some(n), maybe{}, func(i int, _ *string, c, _ maybe) error {
			if plan[i].err != nil {
				return plan[i].err
			}
			return w.validate(plan[i].atom, c.node)
		})
	}
	return n.each(func(key *string, child node) error {
		a, err := w.plans.fieldAtom(t, *key)
		if err != nil {
			return err
		}
		return w.validate(a, child)
	})
}

// validateItems validates the items of a list node.
func (w *walker) validateItems(t *smdschema.List, n node) error {
	if n.k != kList || n.v.Len() == 0 {
		return nil
	}
	if t.ElementRelationship != smdschema.Atomic && t.ElementRelationship != smdschema.Associative {
		// The library's comparison cannot index such items: where it
		// compares what the walk only validates (equal values), it fails.
		return errSlowPath
	}
	elem, err := atomOf(w.plans.schema, t.ElementType)
	if err != nil {
		return err
	}
	for i := range n.v.Len() {
		item, err := n.item(i)
		if err != nil {
			return err
		}
		if t.ElementRelationship == smdschema.Associative {
			if _, err := w.itemElement(t, item); err != nil {
				return err
			}
		}
		if err := w.validate(elem, item); err != nil {
			return err
		}
	}
	return nil
}
