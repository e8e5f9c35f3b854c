package fieldmanager

import (
	"bytes"
	"encoding/base64"
	"errors"
)

// Equality of nodes, as value.Equals decides it for the values the
// library wraps: what makes a leaf modified.

// errUnequal stops a comparison at the first difference.
var errUnequal = errors.New("fieldmanager: values differ")

// nodeEqual reports value.Equals(l, r): scalars by kind (numbers compare
// as floats when either is one), lists item by item, maps entry by entry,
// null only equal to null.
func nodeEqual(l, r node) (bool, error) {
	switch {
	case l.isScalar() || r.isScalar():
		if !l.isScalar() || !r.isScalar() {
			return false, nil
		}
		return scalarEqual(l, r), nil
	case l.isList() || r.isList():
		if !l.isList() || !r.isList() || l.v.Len() != r.v.Len() {
			return false, nil
		}
		for i := range l.v.Len() {
			li, err := l.item(i)
			if err != nil {
				return false, err
			}
			ri, err := r.item(i)
			if err != nil {
				return false, err
			}
			if eq, err := nodeEqual(li, ri); !eq || err != nil {
				return false, err
			}
		}
		return true, nil
	case l.isMap() || r.isMap():
		if !l.isMap() || !r.isMap() {
			return false, nil
		}
		return mapEqual(l, r)
	}
	return true, nil // both null
}

// mapEqual is Map.Equals: the same keys with equal values.
func mapEqual(l, r node) (bool, error) {
	var err error
	if l.k == kStruct && r.k == kStruct && l.v.Type() == r.v.Type() {
		err = zipStructs(some(l), some(r), func(_ int, _ *string, lc, rc maybe) error {
			if !lc.ok || !rc.ok {
				return errUnequal
			}
			return equalOrStop(lc.node, rc.node)
		})
	} else {
		if l.length() != r.length() {
			return false, nil
		}
		err = l.each(func(key *string, lc node) error {
			rc, ok, err := r.get(*key)
			if err != nil {
				return err
			}
			if !ok {
				return errUnequal
			}
			return equalOrStop(lc, rc)
		})
	}
	if err == errUnequal {
		return false, nil
	}
	return err == nil, err
}

// equalOrStop returns errUnequal when l and r differ.
func equalOrStop(l, r node) error {
	eq, err := nodeEqual(l, r)
	if err == nil && !eq {
		err = errUnequal
	}
	return err
}

// scalarEqual is value.Equals of two scalar nodes.
func scalarEqual(l, r node) bool {
	lc, rc := l.class(), r.class()
	switch {
	case lc == cFloat || rc == cFloat:
		lf, lok := l.float()
		rf, rok := r.float()
		return lok && rok && lf == rf
	case lc != rc:
		return false
	case lc == cInt:
		return l.int() == r.int()
	case lc == cString:
		if l.k == kBytes && r.k == kBytes {
			return bytes.Equal(l.v.Bytes(), r.v.Bytes())
		}
		return l.str() == r.str()
	case lc == cBool:
		return l.bool() == r.bool()
	}
	return false
}

// scalarClass is a scalar's kind as Value's IsFloat, IsInt, IsString and
// IsBool tell it.
type scalarClass uint8

const (
	cNone scalarClass = iota
	cFloat
	cInt
	cString
	cBool
)

func (n node) class() scalarClass {
	switch n.k {
	case kFloat:
		return cFloat
	case kInt, kUint:
		return cInt
	case kString, kBytes, kTime, kMicroTime, kQuantity:
		return cString
	case kBool:
		return cBool
	case kScalar:
		switch n.u.(type) {
		case float64:
			return cFloat
		case int64:
			return cInt
		case string:
			return cString
		case bool:
			return cBool
		}
	}
	return cNone
}

// float returns a number as float64 (ints converted), false for others.
func (n node) float() (float64, bool) {
	switch n.class() {
	case cFloat:
		if n.k == kScalar {
			return n.u.(float64), true
		}
		return n.v.Float(), true
	case cInt:
		return float64(n.int()), true
	}
	return 0, false
}

func (n node) int() int64 {
	switch n.k {
	case kInt:
		return n.v.Int()
	case kUint:
		return int64(n.v.Uint())
	}
	return n.u.(int64)
}

func (n node) str() string {
	switch n.k {
	case kString:
		return n.v.String()
	case kBytes:
		return base64.StdEncoding.EncodeToString(n.v.Bytes())
	case kTime, kMicroTime, kQuantity:
		return n.lazyString()
	}
	return n.u.(string)
}

func (n node) bool() bool {
	if n.k == kBool {
		return n.v.Bool()
	}
	return n.u.(bool)
}
