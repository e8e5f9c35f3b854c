package apiserver

import (
	"bytes"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// encodeCache shares the serialization of watch event objects between
// watchers. The store hands every watcher of a resource the same object
// for an event; encoding it once per media type instead of once per
// watcher is what keeps fan-out to many watchers cheap (kube-apiserver's
// cachingObject does the same). Entries live in a small ring: an event is
// encoded by its first watcher and served from here to the others while
// they catch up.
type encodeCache struct {
	mu      sync.Mutex
	entries map[encodeKey]*encodeEntry
	ring    []encodeKey
	next    int
}

type encodeKey struct {
	obj       runtime.Object // the store's shared pointer
	mediaType string
	gv        schema.GroupVersion
}

type encodeEntry struct {
	once sync.Once
	data []byte
	err  error
}

func newEncodeCache(size int) *encodeCache {
	return &encodeCache{entries: make(map[encodeKey]*encodeEntry, size), ring: make([]encodeKey, size)}
}

// get returns the encoding of key.obj, computing it at most once while the
// entry is cached. encode must not mutate the shared object.
func (c *encodeCache) get(key encodeKey, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &encodeEntry{}
		if old := c.ring[c.next]; old.obj != nil {
			delete(c.entries, old)
		}
		c.ring[c.next] = key
		c.next = (c.next + 1) % len(c.ring)
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.data, e.err = encode() })
	return e.data, e.err
}

// encodeShared encodes a store-owned object for a watch without mutating
// it: one deep copy and one encoding per event and media type.
func (s *Server) encodeShared(t target, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	key := encodeKey{obj: obj, mediaType: t.info.MediaType, gv: gv}
	return s.encoded.get(key, func() ([]byte, error) {
		cp := obj.DeepCopyObject()
		var buf bytes.Buffer
		if err := s.encoderFor(t.info.Serializer, cp, gv).Encode(cp, &buf); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}
