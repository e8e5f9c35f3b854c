package fieldmanager

import (
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// The walker of a recorded create (shape.go): reused from a per-kind
// pool, and visiting the entries of Go maps in key order.

// createWalker returns a walker that records the paths of a create into
// its recorder, over the schema of plans, never recording reset's fields.
func (c *createMemo) createWalker(plans *structPlans, reset *fieldpath.Set) *walker {
	w, _ := c.pool.Get().(*walker)
	if w == nil {
		w = &walker{rec: &shapeRecorder{}}
	}
	w.plans = plans
	w.changed, w.removed = setBuilder{}, setBuilder{}
	w.path, w.buf, w.skip = w.path[:0], w.buf[:0], 0
	w.exclude = append(w.exclude[:0], reset)
	w.rec.reset()
	w.rec.items = &c.items
	return w
}

// putWalker gives w back to the pool, holding no reference to the walked
// object.
func (c *createMemo) putWalker(w *walker) {
	clear(w.path[:cap(w.path)])
	clear(w.exclude[:cap(w.exclude)])
	clear(w.buf[:cap(w.buf)])
	clear(w.rec.keys[:cap(w.rec.keys)])
	for _, m := range w.rec.maps {
		m.vals.Clear()
		m.used = 0
	}
	c.pool.Put(w)
}

// mapScratch is a recording walker's storage for the entries of the maps
// of one Go type it walks: a key to read keys into, and values used as a
// stack (maps of the type below the one being walked take the values
// after its own).
type mapScratch struct {
	t    reflect.Type
	key  reflect.Value
	vals reflect.Value // []elem
	used int
}

// mapScratch returns the scratch of map type t with room for l more
// values, and the values slice and offset they start at; the caller gives
// them back with s.used -= l.
func (r *shapeRecorder) mapScratch(t reflect.Type, l int) (s *mapScratch, vals reflect.Value, off int) {
	for _, m := range r.maps {
		if m.t == t {
			s = m
			break
		}
	}
	if s == nil {
		s = &mapScratch{t: t, key: reflect.New(t.Key()).Elem()}
		r.maps = append(r.maps, s)
	}
	if !s.vals.IsValid() || s.vals.Len()-s.used < l {
		// Walks holding values of the old slice keep it.
		n := max(2*(s.used+l), 8)
		s.vals = reflect.MakeSlice(reflect.SliceOf(t.Elem()), n, n)
	}
	off = s.used
	s.used += l
	return s, s.vals, off
}

// entries is n.each, except that a recording walker gets the entries of
// a Go map in key order.
func (w *walker) entries(n node, fn func(key *string, child node) error) error {
	if w.rec == nil || n.k != kMap || n.v.Len() == 0 {
		return n.each(fn)
	}
	t := n.v.Type()
	l := n.v.Len()
	// The keys go on the recorder's stack: fn holds pointers to them
	// while it runs, and maps below append theirs after them.
	start := len(w.rec.keys)
	s, vals, off := w.rec.mapScratch(t, l)
	defer func() {
		w.rec.keys = w.rec.keys[:start]
		s.used -= l
	}()
	i := 0
	for it := n.v.MapRange(); it.Next() && i < l; i++ {
		s.key.SetIterKey(it)
		w.rec.keys = append(w.rec.keys, s.key.String())
		vals.Index(off + i).SetIterValue(it)
	}
	keys := w.rec.keys[start:]
	var small [16]int
	order := small[:0]
	if i > len(small) {
		order = make([]int, 0, i)
	}
	for j := range i {
		order = append(order, j)
	}
	if i > len(small) {
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	} else {
		// Insertion sort: most maps of objects are small (labels,
		// resources).
		for j := 1; j < i; j++ {
			for k := j; k > 0 && keys[order[k-1]] > keys[order[k]]; k-- {
				order[k-1], order[k] = order[k], order[k-1]
			}
		}
	}
	e := value.TypeReflectEntryOf(t.Elem())
	for _, j := range order {
		c, err := wrap(vals.Index(off+j), e)
		if err != nil {
			return err
		}
		if err := fn(&keys[j], c); err != nil {
			return err
		}
	}
	return nil
}
