package apiserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
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
//
// Protobuf encodings cost one allocation each, of the object's size: the
// serializer sizes the object and asks for one buffer (see keepWriter),
// which the cache keeps, with frameRoom spare bytes in front of the
// object. A protobuf watch frame ends with the object's bytes, so the
// object's first watch event writes its frame header into that room and
// serves the frame from the same array (see frameInPlace): the object's
// bytes are neither copied for the cache nor for the frame.
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

// encoding is an object's encoding, data, at the end of buf, the
// allocation holding it: buf[:len(buf)-len(data)] is free room.
type encoding struct {
	buf, data []byte
}

// encodeAllocated encodes obj with enc into one allocation of its size
// (as the serializer estimates it: protobuf's estimate of the envelope's
// length varint runs a few bytes over) with room free bytes in front of it.
func (c *encodeCache) encodeAllocated(enc runtime.EncoderWithAllocator, obj runtime.Object, room int) (encoding, error) {
	k := &keepWriter{room: room}
	if err := enc.EncodeWithAllocator(obj, k, k); err != nil {
		return encoding{}, err
	}
	if !k.kept {
		out := k.out[:len(k.out):len(k.out)]
		return encoding{buf: out, data: out}, nil
	}
	end := room + len(k.out)
	return encoding{buf: k.alloc[:end:end], data: k.out}, nil
}

// keepWriter is the memory allocator and the writer of an encoder that
// encodes with an allocator (runtime.EncoderWithAllocator): it allocates
// what the encoder asks for, room bytes in front, and keeps the slice the
// encoder writes when it is the one it allocated, where a buffer would
// copy it. Any other write (several writes, or bytes not from Allocate) is
// copied, so the result is always what was written.
type keepWriter struct {
	room  int
	alloc []byte // the last allocation, room included
	out   []byte // what was written
	kept  bool   // out is alloc[room:], not a copy
}

// Allocate implements runtime.MemoryAllocator.
func (k *keepWriter) Allocate(n uint64) []byte {
	k.alloc = make([]byte, k.room+int(n))
	return k.alloc[k.room:]
}

// Write implements io.Writer.
func (k *keepWriter) Write(p []byte) (int, error) {
	switch {
	case len(p) == 0:
	case k.out == nil && len(k.alloc) > k.room && &p[0] == &k.alloc[k.room]:
		k.out, k.kept = p[:len(p):len(p)], true
	default:
		k.out = append(k.out, p...) // out is clipped when kept: a copy
		k.kept = false
	}
	return len(p), nil
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
	// buf is data's allocation when data, an object's protobuf encoding,
	// was encoded with room in front of it (data is buf's tail); the
	// first watch frame built from the entry claims the room.
	buf     []byte
	claimed atomic.Bool
}

func newEncodeCache(size int) *encodeCache {
	return &encodeCache{entries: make(map[encodeKey]*encodeEntry, size), ring: make([]encodeKey, size)}
}

// entry returns the entry of key, filled by fill at most once while the
// entry is cached. fill must not mutate the shared object.
func (c *encodeCache) entry(key encodeKey, fill func(e *encodeEntry)) *encodeEntry {
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
	e.once.Do(func() { fill(e) })
	return e
}

// get returns the encoding of key.obj, computing it at most once while the
// entry is cached. encode must not mutate the shared object.
func (c *encodeCache) get(key encodeKey, encode func() ([]byte, error)) ([]byte, error) {
	e := c.entry(key, func(e *encodeEntry) { e.data, e.err = encode() })
	return e.data, e.err
}

// encodeShared encodes a store-owned object for a watch (or the response
// to the write that stored it) without mutating it: one encoding per event
// and media type (see encodeView).
func (s *Server) encodeShared(t target, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	e := s.sharedEntry(t, obj, gv)
	return e.data, e.err
}

// sharedEntry is the cache entry of encodeShared; protobuf encodings keep
// frameRoom free bytes in front of them for the object's watch frame.
func (s *Server) sharedEntry(t target, obj runtime.Object, gv schema.GroupVersion) *encodeEntry {
	key := encodeKey{obj: obj, mediaType: t.info.MediaType, gv: gv}
	return s.encoded.entry(key, func(e *encodeEntry) {
		room := 0
		if t.info.MediaType == runtime.ContentTypeProtobuf {
			room = frameRoom
		}
		var enc encoding
		enc, e.err = s.encodeViewRoom(t.info.Serializer, obj, gv, room)
		e.buf, e.data = enc.buf, enc.data
	})
}

// encodeEvent returns a watch event of typ carrying the shared obj as the
// watch stream of target t writes it: encoded and framed once per event,
// type and media type, then written as is by every watcher.
func (s *Server) encodeEvent(t target, typ watch.EventType, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	key := encodeKey{obj: obj, mediaType: t.info.MediaType, gv: gv, event: typ}
	return s.encoded.get(key, func() ([]byte, error) {
		oe := s.sharedEntry(t, obj, gv)
		if oe.err != nil {
			return nil, oe.err
		}
		data := oe.data
		if t.info.MediaType == runtime.ContentTypeProtobuf {
			if frame, ok := oe.frameInPlace(typ); ok {
				return frame, nil
			}
			return protobufFrame(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}})
		}
		ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}}
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

// A protobuf watch frame of an event carrying an object encoded in n
// bytes is
//
//	uint32 length (big endian) of the metav1.WatchEvent that follows
//	0x0a varint(len(type)) type         WatchEvent.Type, field 1
//	0x12 varint(1+varint(n)+n)          WatchEvent.Object, field 2
//	0x0a varint(n)                      RawExtension.Raw, field 1
//	the object's n bytes
//
// (metav1.WatchEvent's generated marshaller always writes both fields, and
// Raw when it is not nil). Everything in front of the object's bytes is the
// frame header: frameRoom is its largest size, for the longest event type
// (MODIFIED, BOOKMARK) and the largest lengths a frame's 32-bit length
// allows (varints of 5 bytes).
const (
	maxFramedType = len(watch.Modified)
	frameRoom     = 4 + 1 + 1 + maxFramedType + 2*(1+binary.MaxVarintLen32)
)

// varintLen is the size of v as a protobuf varint.
func varintLen(v uint64) int { return protowire.SizeVarint(v) }

// frameSizes returns, for an event of a type of typLen bytes carrying an
// object of n bytes, the size of its protobuf WatchEvent and of the
// frame's header (everything before the object's bytes).
func frameSizes(typLen, n int) (event, header int) {
	raw := 1 + varintLen(uint64(n)) + n
	event = 1 + varintLen(uint64(typLen)) + typLen + 1 + varintLen(uint64(raw)) + raw
	return event, 4 + event - n
}

// frameInPlace returns the protobuf watch frame of an event of typ
// carrying e's object: its header written into the free room in front of
// the object's bytes, which the frame shares with e.data. The room is
// claimed once: ok is false when e has no room (not a protobuf encoding,
// or one a writer did not hand over), too little for the header, or when
// another event type already framed the object there.
func (e *encodeEntry) frameInPlace(typ watch.EventType) ([]byte, bool) {
	n := len(e.data)
	room := len(e.buf) - n
	if room <= 0 || n == 0 {
		return nil, false
	}
	event, header := frameSizes(len(typ), n)
	if header > room || uint64(event) > math.MaxUint32 || !e.claimed.CompareAndSwap(false, true) {
		return nil, false
	}
	f := e.buf[room-header:]
	binary.BigEndian.PutUint32(f, uint32(event))
	i := 4
	f[i] = 0x0a
	i++
	i += binary.PutUvarint(f[i:], uint64(len(typ)))
	i += copy(f[i:], typ)
	f[i] = 0x12
	i++
	i += binary.PutUvarint(f[i:], uint64(1+varintLen(uint64(n))+n))
	f[i] = 0x0a
	i++
	binary.PutUvarint(f[i:], uint64(n))
	return f, true
}
