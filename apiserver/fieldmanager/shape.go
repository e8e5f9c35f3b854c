package fieldmanager

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Create shapes. The creates of a kind mostly record one same field set:
// every Event a kubelet writes, every pod of one ReplicaSet. Building that
// set path by path, taking the stripped fields out of it and comparing it
// with the previous one to reuse its JSON costs as much as the walk that
// finds the paths. So a create's walk does not build a set: it writes the
// paths it would insert, in order, into a byte buffer (its shape), and
// when that buffer equals, byte for byte, the shape of one of the kind's
// latest creates, that create's set and JSON are the answer. Only an
// unseen shape is turned into a set, by decoding the buffer.
//
// The encoding is exact, never a hash: each path is written as the number
// of leading elements it shares with the previous path and its other
// elements, each element as a tagged field name, list key (names and
// values), set value or index, and each value with its Go type (int64,
// float64, string, bool or null; any other value, which no schema key
// holds, makes the shape unusable and the walk is done again the usual
// way). Equal shapes are equal sequences of paths, hence equal sets. Map
// entries are walked in key order while recording, so that the same
// labels make the same shape whatever order Go iterates them in.

// errBadShape: a shape that does not decode (never written by record).
var errBadShape = errors.New("fieldmanager: malformed create shape")

// Element and value tags.
const (
	tagField = 'f'
	tagKey   = 'k'
	tagValue = 'v'
	tagIndex = 'i'

	tagNull   = 'n'
	tagInt    = 'I'
	tagFloat  = 'F'
	tagString = 'S'
	tagFalse  = '0'
	tagTrue   = '1'
)

// shapeRecorder writes the paths a walk inserts into buf. valid is the
// number of leading elements of the walker's current path that equal
// those of the last path written; bad is set when a value cannot be
// written. The rest is the recording walker's reusable state: the kind's
// list item elements (shapeitems.go), scratch space for their keys, and
// the keys of the maps being walked, as a stack (shapewalk.go).
type shapeRecorder struct {
	buf   []byte
	valid int
	bad   bool

	items   *itemCache
	scratch []byte
	keys    []string
	maps    []*mapScratch
}

func (r *shapeRecorder) reset() {
	r.buf, r.valid, r.bad = r.buf[:0], 0, false
}

// record writes path, the walker's current path.
func (r *shapeRecorder) record(path fieldpath.Path) {
	if len(path) == 0 || r.bad {
		return
	}
	k := min(r.valid, len(path))
	r.buf = binary.AppendUvarint(r.buf, uint64(k))
	r.buf = binary.AppendUvarint(r.buf, uint64(len(path)-k))
	for _, pe := range path[k:] {
		if r.buf, r.bad = appendElement(r.buf, pe); r.bad {
			return
		}
	}
	r.valid = len(path)
}

// truncate follows the walker back to depth.
func (r *shapeRecorder) truncate(depth int) {
	if r.valid > depth {
		r.valid = depth
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendElement writes pe; bad reports a value it cannot write.
func appendElement(b []byte, pe fieldpath.PathElement) (_ []byte, bad bool) {
	switch {
	case pe.FieldName != nil:
		return appendString(append(b, tagField), *pe.FieldName), false
	case pe.Key != nil:
		b = binary.AppendUvarint(append(b, tagKey), uint64(len(*pe.Key)))
		for _, f := range *pe.Key {
			b = appendString(b, f.Name)
			if b, bad = appendValue(b, f.Value); bad {
				return b, true
			}
		}
		return b, false
	case pe.Value != nil:
		return appendValue(append(b, tagValue), *pe.Value)
	case pe.Index != nil:
		return binary.AppendVarint(append(b, tagIndex), int64(*pe.Index)), false
	}
	return b, true
}

// appendValue writes a scalar value with its Go type.
func appendValue(b []byte, v value.Value) (_ []byte, bad bool) {
	switch u := v.Unstructured().(type) {
	case nil:
		return append(b, tagNull), false
	case int64:
		return binary.AppendVarint(append(b, tagInt), u), false
	case float64:
		return binary.BigEndian.AppendUint64(append(b, tagFloat), math.Float64bits(u)), false
	case string:
		return appendString(append(b, tagString), u), false
	case bool:
		if u {
			return append(b, tagTrue), false
		}
		return append(b, tagFalse), false
	}
	return b, true
}

// shapeReader decodes a shape.
type shapeReader struct {
	b   []byte
	err error
}

func (r *shapeReader) uvarint() int {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxInt32 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *shapeReader) fail() {
	r.err, r.b = errBadShape, nil
}

func (r *shapeReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *shapeReader) string() string {
	n := r.uvarint()
	if n > len(r.b) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *shapeReader) value() value.Value {
	switch r.byte() {
	case tagNull:
		return value.NewValueInterface(nil)
	case tagInt:
		v, n := binary.Varint(r.b)
		if n <= 0 {
			r.fail()
			break
		}
		r.b = r.b[n:]
		return value.NewValueInterface(v)
	case tagFloat:
		if len(r.b) < 8 {
			r.fail()
			break
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(r.b))
		r.b = r.b[8:]
		return value.NewValueInterface(f)
	case tagString:
		return value.NewValueInterface(r.string())
	case tagFalse:
		return value.NewValueInterface(false)
	case tagTrue:
		return value.NewValueInterface(true)
	default:
		r.fail()
	}
	return value.NewValueInterface(nil)
}

func (r *shapeReader) element() fieldpath.PathElement {
	switch r.byte() {
	case tagField:
		s := r.string()
		return fieldpath.PathElement{FieldName: &s}
	case tagKey:
		n := r.uvarint()
		if n > len(r.b) {
			r.fail()
			break
		}
		keys := make(value.FieldList, n)
		for i := range keys {
			keys[i].Name = r.string()
			keys[i].Value = r.value()
		}
		return fieldpath.PathElement{Key: &keys}
	case tagValue:
		v := r.value()
		return fieldpath.PathElement{Value: &v}
	case tagIndex:
		v, n := binary.Varint(r.b)
		if n <= 0 || v < 0 || v > math.MaxInt32 {
			r.fail()
			break
		}
		r.b = r.b[n:]
		i := int(v)
		return fieldpath.PathElement{Index: &i}
	default:
		r.fail()
	}
	return fieldpath.PathElement{}
}

// shapeSet returns the set of the paths of shape, inserted in its order.
func shapeSet(shape []byte) (*fieldpath.Set, error) {
	b := setBuilder{set: &fieldpath.Set{}}
	r := shapeReader{b: shape}
	var path fieldpath.Path
	for len(r.b) > 0 && r.err == nil {
		k, n := r.uvarint(), r.uvarint()
		if k > len(path) || n > len(r.b) || k+n == 0 {
			r.fail()
			break
		}
		path = path[:k]
		b.truncate(k)
		for range n {
			path = append(path, r.element())
		}
		if r.err == nil {
			b.insert(path)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return b.set, nil
}

// shapeSlots is how many shapes a kind remembers: the Events of the
// kubelet and of the scheduler, the pods of a few ReplicaSets at once.
const shapeSlots = 4

// shapeMemo is a create's shape and the JSON of the field set it records
// (nil when the set is empty); never modified.
type shapeMemo struct {
	shape []byte
	raw   []byte
}

// createMemo is the per-kind state of the create fast path: the latest
// shapes and the walkers to reuse.
type createMemo struct {
	shapes [shapeSlots]atomic.Pointer[shapeMemo]
	next   atomic.Uint32
	pool   sync.Pool // *walker with a recorder
	items  itemCache
}

// lookup returns the memo of shape, or nil.
func (c *createMemo) lookup(shape []byte) *shapeMemo {
	for i := range c.shapes {
		if m := c.shapes[i].Load(); m != nil && bytes.Equal(m.shape, shape) {
			return m
		}
	}
	return nil
}

// store remembers m in place of the oldest shape.
func (c *createMemo) store(m *shapeMemo) {
	c.shapes[int(c.next.Add(1)-1)%shapeSlots].Store(m)
}
