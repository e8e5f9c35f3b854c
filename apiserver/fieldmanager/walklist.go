package fieldmanager

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Lists in the walk: atomic lists are leaves, associative lists are
// compared item by item, matched by their keys (or, for sets, their
// values), as compareWalker.visitListItems does, duplicates included.

// listItem is an item of a list being compared: its node, path element,
// whether it belongs to lhs, and the index of the first item of either
// list with the same path element.
type listItem struct {
	n     node
	pe    fieldpath.PathElement
	left  bool
	first int
}

// doList mirrors compareWalker.doList; it reports whether the list was a leaf.
func (w *walker) doList(t *smdschema.List, lhs, rhs maybe) (bool, error) {
	if (lhs.present() && !lhs.isList()) || (rhs.present() && !rhs.isList()) {
		return false, errSlowPath // invalid: validation fails
	}
	llen, rlen := 0, 0
	if lhs.present() {
		llen = lhs.v.Len()
	}
	if rhs.present() {
		rlen = rhs.v.Len()
	}
	if t.ElementRelationship == smdschema.Atomic || (llen == 0 && rlen == 0) {
		for _, n := range [2]maybe{lhs, rhs} {
			if n.ok {
				if err := w.validateItems(t, n.node); err != nil {
					return true, err
				}
			}
		}
		return true, w.doLeaf(lhs, rhs)
	}
	if t.ElementRelationship != smdschema.Associative {
		return false, errSlowPath // the library cannot index the items
	}
	start := len(w.buf)
	defer func() { w.buf = w.buf[:start] }()
	for _, side := range [2]struct {
		n    node
		len  int
		left bool
	}{{lhs.node, llen, true}, {rhs.node, rlen, false}} {
		for i := range side.len {
			item, err := side.n.item(i)
			if err != nil {
				return false, err
			}
			pe, err := w.itemElement(t, item)
			if err != nil {
				return false, err
			}
			w.buf = append(w.buf, listItem{n: item, pe: pe, left: side.left})
		}
	}
	matchItems(w.buf[start:])
	elem, err := atomOf(w.plans.schema, t.ElementType)
	if err != nil {
		return false, err
	}
	for i := start; i < len(w.buf); i++ {
		if w.buf[i].first != i-start {
			continue
		}
		if err := w.visitItem(elem, start, i); err != nil {
			return false, err
		}
	}
	return false, nil
}

// visitItem compares the items of both lists with the path element of
// w.buf[u], the first of them: one on each side at most are compared as
// values; duplicates are compared as an atomic whole, as the library does.
func (w *walker) visitItem(elem smdschema.Atom, start, u int) error {
	var l, r maybe
	lc, rc := 0, 0
	for j := u; j < len(w.buf); j++ {
		it := &w.buf[j]
		if it.first != u-start {
			continue
		}
		if it.left {
			if lc++; lc == 1 {
				l = some(it.n)
			}
		} else if rc++; rc == 1 {
			r = some(it.n)
		}
	}
	pe := w.buf[u].pe
	if lc <= 1 && rc <= 1 {
		w.push(pe)
		err := w.compare(elem, l, r)
		w.pop()
		return err
	}
	// Duplicates: the copies the library does not descend into are still
	// validated.
	for j := u; j < len(w.buf); j++ {
		if it := w.buf[j]; it.first == u-start && ((it.left && lc >= 2) || (!it.left && rc >= 2)) {
			if err := w.validate(elem, it.n); err != nil {
				return err
			}
		}
	}
	w.push(pe)
	defer w.pop()
	switch {
	case lc >= 2 && rc >= 2:
		eq, err := w.duplicatesEqual(start, u)
		if err != nil {
			return err
		}
		if !eq {
			w.addChanged()
		}
	case lc >= 2:
		if r.ok {
			if err := w.compare(elem, maybe{}, r); err != nil {
				return err
			}
		}
		w.addRemoved()
	default:
		if l.ok {
			if err := w.compare(elem, l, maybe{}); err != nil {
				return err
			}
		}
		w.addChanged()
	}
	return nil
}

// duplicatesEqual compares, in order, the lhs and rhs copies of the item
// w.buf[u].
func (w *walker) duplicatesEqual(start, u int) (bool, error) {
	var ls, rs []node
	for j := u; j < len(w.buf); j++ {
		if it := w.buf[j]; it.first == u-start {
			if it.left {
				ls = append(ls, it.n)
			} else {
				rs = append(rs, it.n)
			}
		}
	}
	if len(ls) != len(rs) {
		return false, nil
	}
	for i := range ls {
		if eq, err := nodeEqual(ls[i], rs[i]); !eq || err != nil {
			return false, err
		}
	}
	return true, nil
}

// matchItems sets each item's first: the index of the first item with an
// equal path element.
func matchItems(items []listItem) {
	if len(items) <= 16 {
		for i := range items {
			items[i].first = i
			for j := range i {
				if items[j].first == j && items[j].pe.Equals(items[i].pe) {
					items[i].first = j
					break
				}
			}
		}
		return
	}
	seen := make(map[string]int, len(items))
	for i := range items {
		k := items[i].pe.String()
		if j, ok := seen[k]; ok {
			items[i].first = j
			continue
		}
		seen[k] = i
		items[i].first = i
	}
}

// buildItemElement mirrors listItemToPathElement for an associative list
// (itemElement, in shapeitems.go, is what the walk calls).
func (w *walker) buildItemElement(t *smdschema.List, item node) (fieldpath.PathElement, error) {
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
		a, ok := w.plans.schema.Resolve(t.ElementType)
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
