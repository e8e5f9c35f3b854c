package fieldmanager

import (
	"encoding/binary"
	"math"
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// List items in a recorded create. The path element of an item of an
// associative list is its keys (names and values) or, in a set, its value:
// building it allocates the key list and boxes each value, for every
// container, port, environment variable and owner reference of every pod.
// The creates of a kind mostly meet the same items (a template's), so a
// recording walker keeps the elements it built in the kind's cache, under
// the exact encoding of what they are built from (the key names and the
// values with their Go types, as shape.go writes them): an element is only
// shared by items with equal keys. Elements are never modified once built.

// itemCacheGeneration bounds the cache: at most two generations of this
// many elements; one in use moves to the current generation.
const itemCacheGeneration = 1024

// itemCache holds the path elements of list items of one kind.
type itemCache struct {
	mu       sync.Mutex
	cur, old map[string]fieldpath.PathElement
}

func (c *itemCache) get(key []byte) (fieldpath.PathElement, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pe, ok := c.cur[string(key)]; ok {
		return pe, true
	}
	pe, ok := c.old[string(key)]
	if ok {
		c.putLocked(string(key), pe)
	}
	return pe, ok
}

func (c *itemCache) put(key []byte, pe fieldpath.PathElement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(string(key), pe)
}

func (c *itemCache) putLocked(k string, pe fieldpath.PathElement) {
	if len(c.cur) >= itemCacheGeneration {
		c.old, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[string]fieldpath.PathElement, itemCacheGeneration)
	}
	c.cur[k] = pe
}

// itemElement is buildItemElement, through the kind's cache when the walker
// records a create.
func (w *walker) itemElement(t *smdschema.List, item node) (fieldpath.PathElement, error) {
	if w.rec == nil || w.rec.items == nil {
		return w.buildItemElement(t, item)
	}
	key, ok := w.rec.itemKey(t, item)
	if !ok {
		return w.buildItemElement(t, item)
	}
	if pe, ok := w.rec.items.get(key); ok {
		return pe, nil
	}
	pe, err := w.buildItemElement(t, item)
	if err == nil {
		w.rec.items.put(key, pe)
	}
	return pe, err
}

// itemKey encodes, into the recorder's scratch buffer, what the path
// element of item is built from; ok is false for an item whose element
// is not cached (a key missing or not a scalar: defaults and errors are
// left to buildItemElement).
func (r *shapeRecorder) itemKey(t *smdschema.List, item node) ([]byte, bool) {
	b := r.scratch[:0]
	ok := true
	if len(t.Keys) == 0 {
		if !item.isScalar() {
			return nil, false
		}
		b, ok = appendNodeValue(append(b, tagValue), item)
	} else {
		if !item.isMap() {
			return nil, false
		}
		b = append(b, tagKey)
		for _, name := range t.Keys {
			kv, found, err := item.get(name)
			if err != nil || !found || !kv.isScalar() {
				return nil, false
			}
			b = appendString(b, name)
			if b, ok = appendNodeValue(b, kv); !ok {
				break
			}
		}
	}
	r.scratch = b
	return b, ok
}

// appendNodeValue writes a scalar node's value as appendValue writes the
// Value node.scalar() makes of it.
func appendNodeValue(b []byte, n node) ([]byte, bool) {
	switch n.k {
	case kInt:
		return binary.AppendVarint(append(b, tagInt), n.v.Int()), true
	case kUint:
		return binary.AppendVarint(append(b, tagInt), int64(n.v.Uint())), true
	case kFloat:
		return binary.BigEndian.AppendUint64(append(b, tagFloat), math.Float64bits(n.v.Float())), true
	case kString:
		return appendString(append(b, tagString), n.v.String()), true
	case kBool:
		if n.v.Bool() {
			return append(b, tagTrue), true
		}
		return append(b, tagFalse), true
	case kBytes, kTime, kMicroTime, kQuantity:
		return appendString(append(b, tagString), n.str()), true
	case kScalar:
		switch u := n.u.(type) {
		case int64:
			return binary.AppendVarint(append(b, tagInt), u), true
		case float64:
			return binary.BigEndian.AppendUint64(append(b, tagFloat), math.Float64bits(u)), true
		case string:
			return appendString(append(b, tagString), u), true
		case bool:
			if u {
				return append(b, tagTrue), true
			}
			return append(b, tagFalse), true
		}
	}
	return b, false
}
