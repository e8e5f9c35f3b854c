package apiserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
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

	// bufs recycles encoding buffers (*bytes.Buffer): encoding into a
	// grown buffer and copying the result out once allocates half of
	// what growing a new buffer for every object does.
	bufs sync.Pool
}

// maxPooledBuffer keeps buffers of huge objects out of the pool.
const maxPooledBuffer = 1 << 20

// encodeTo encodes obj with enc and returns a copy of exactly its size.
func (c *encodeCache) encodeTo(enc runtime.Encoder, obj runtime.Object) ([]byte, error) {
	buf, _ := c.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	err := enc.Encode(obj, buf)
	if buf.Cap() > maxPooledBuffer {
		return buf.Bytes(), err // big (a list): hand the buffer over
	}
	defer c.bufs.Put(buf)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

type encodeKey struct {
	obj       runtime.Object // the store's shared pointer
	mediaType string
	gv        schema.GroupVersion
	// event is "" for the object's encoding, else the type of the framed
	// watch event carrying it.
	event watch.EventType
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

// encodeShared encodes a store-owned object for a watch (or the response
// to the write that stored it) without mutating it: one encoding per event
// and media type (see encodeView).
func (s *Server) encodeShared(t target, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	key := encodeKey{obj: obj, mediaType: t.info.MediaType, gv: gv}
	return s.encoded.get(key, func() ([]byte, error) {
		return s.encodeView(t.info.Serializer, obj, gv)
	})
}

// encodeEvent returns a watch event of typ carrying the shared obj as the
// watch stream of target t writes it: encoded and framed once per event,
// type and media type, then written as is by every watcher.
func (s *Server) encodeEvent(t target, typ watch.EventType, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	key := encodeKey{obj: obj, mediaType: t.info.MediaType, gv: gv, event: typ}
	return s.encoded.get(key, func() ([]byte, error) {
		data, err := s.encodeShared(t, obj, gv)
		if err != nil {
			return nil, err
		}
		ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}}
		if t.info.MediaType == runtime.ContentTypeProtobuf {
			return protobufFrame(ev)
		}
		var buf bytes.Buffer
		buf.Grow(len(data) + 64)
		enc := streaming.NewEncoder(t.info.StreamSerializer.Framer.NewFrameWriter(&buf), t.info.StreamSerializer.Serializer)
		if err := enc.Encode(ev); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

// protobufFrame is ev as a protobuf watch stream carries it — a 4-byte
// big-endian length, then the event's raw protobuf encoding (the stream's
// serializer adds no envelope) — written in one allocation of exactly its
// size, where the stream encoder copies it through two growing buffers.
func protobufFrame(ev *metav1.WatchEvent) ([]byte, error) {
	n := ev.Size()
	if uint64(n) > math.MaxUint32 {
		return nil, fmt.Errorf("watch event of %d bytes does not fit a frame", n)
	}
	out := make([]byte, 4+n)
	binary.BigEndian.PutUint32(out, uint32(n))
	if _, err := ev.MarshalToSizedBuffer(out[4:]); err != nil {
		return nil, err
	}
	return out, nil
}
