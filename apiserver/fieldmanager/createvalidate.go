package fieldmanager

import (
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Validation of the create walk: the checks of the library's validating
// walker (typed/validate.go) that its comparison does not make itself.
// Anything that would fail validation sends the object down the library's
// path, which then fails (or not) exactly as before.

func scalarValid(t smdschema.Scalar, n node) bool {
	switch {
	case n.k == kNull:
		return true
	case !n.isScalar():
		return false
	}
	var isNum, isStr, isBool bool
	switch n.k {
	case kInt, kUint, kFloat:
		isNum = true
	case kString, kBytes:
		isStr = true
	case kBool:
		isBool = true
	case kScalar:
		switch n.u.(type) {
		case int64, float64:
			isNum = true
		case string:
			isStr = true
		case bool:
			isBool = true
		}
	}
	switch t {
	case smdschema.Numeric:
		return isNum
	case smdschema.String:
		return isStr
	case smdschema.Boolean:
		return isBool
	case smdschema.Untyped:
		return isNum || isStr || isBool
	}
	return false
}

func (w *createWalker) validate(tr smdschema.TypeRef, n node) error {
	a, err := w.atom(tr)
	if err != nil {
		return err
	}
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
	return n.each(func(key *string, child node) error {
		tr := t.ElementType
		if f, ok := t.FindField(*key); ok {
			tr = f.Type
		} else if (tr == smdschema.TypeRef{}) {
			return errSlowPath
		}
		return w.validate(tr, child)
	})
}

// validateItems validates the items of a list node.
func (w *createWalker) validateItems(t *smdschema.List, n node) error {
	if n.k != kList {
		return nil
	}
	for i := range n.v.Len() {
		item, err := wrap(n.v.Index(i), nil)
		if err != nil {
			return err
		}
		if t.ElementRelationship == smdschema.Associative {
			if _, err := w.itemElement(t, item); err != nil {
				return err
			}
		}
		if err := w.validate(t.ElementType, item); err != nil {
			return err
		}
	}
	return nil
}
