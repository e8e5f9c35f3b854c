package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// frameEventTypes are the event types framed in the tests: every type a
// watch stream carries.
var frameEventTypes = []watch.EventType{watch.Modified, watch.Added, watch.Deleted, watch.Bookmark, watch.Error}

// protobufTarget is the protobuf target of s, with its stream serializer.
func protobufTarget(t *testing.T, s *Server) target {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	require.NotNil(t, info.StreamSerializer)
	return target{info: info}
}

// referenceEncoding is obj's encoding the way every response is encoded
// (a deep copy through the versioning encoder's Encode), and its watch
// frames as apimachinery's streaming encoder writes them, by event type.
func referenceEncoding(t *testing.T, s *Server, tg target, obj runtime.Object) ([]byte, map[watch.EventType][]byte) {
	t.Helper()
	data, err := s.encode(tg, obj.DeepCopyObject(), corev1.SchemeGroupVersion)
	require.NoError(t, err)
	frames := make(map[watch.EventType][]byte)
	for _, typ := range frameEventTypes {
		var buf bytes.Buffer
		enc := streaming.NewEncoder(tg.info.StreamSerializer.Framer.NewFrameWriter(&buf), tg.info.StreamSerializer.Serializer)
		ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}}
		require.NoError(t, enc.Encode(ev))
		copied, err := protobufFrame(ev)
		require.NoError(t, err)
		require.Equal(t, buf.Bytes(), copied, "protobufFrame is the stream encoder's frame")
		frames[typ] = buf.Bytes()
	}
	return data, frames
}

// sizedConfigMaps returns ConfigMaps whose protobuf encodings have every
// size in [lo, hi] that an object's encoding can have, by size (the
// runtime.Unknown envelope's length growing to two bytes skips a size).
func sizedConfigMaps(t *testing.T, s *Server, tg target, lo, hi int) map[int]*corev1.ConfigMap {
	t.Helper()
	out := make(map[int]*corev1.ConfigMap)
	for name := 1; name <= 8; name++ {
		for value := max(0, lo-60); value <= hi; value++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("n", name), Namespace: "default"},
				Data: map[string]string{"k": strings.Repeat("v", value)}}
			data, err := s.encode(tg, cm.DeepCopyObject(), corev1.SchemeGroupVersion)
			require.NoError(t, err)
			if n := len(data); n >= lo && n <= hi && out[n] == nil {
				out[n] = cm
			}
		}
	}
	return out
}

// requireVarintBoundaries checks that sizes cover both sides of the
// varint boundaries of the frame's three lengths (object, RawExtension,
// event) for every event type.
func requireVarintBoundaries(t *testing.T, sizes map[int]*corev1.ConfigMap) {
	t.Helper()
	seen := make(map[string]bool)
	for n := range sizes {
		raw := 1 + varintLen(uint64(n)) + n
		for _, typ := range frameEventTypes {
			event, _ := frameSizes(len(typ), n)
			for what, v := range map[string]int{"object": n, "raw": raw, "event " + string(typ): event} {
				seen[fmt.Sprint(what, v)] = true
			}
		}
	}
	for _, b := range []int{1 << 7, 1 << 14} {
		for _, v := range []int{b - 1, b} {
			for _, what := range []string{"object", "raw"} {
				assert.True(t, seen[fmt.Sprint(what, v)], "no %s of %d bytes", what, v)
			}
			for _, typ := range frameEventTypes {
				assert.True(t, seen[fmt.Sprint("event "+string(typ), v)], "no %s event of %d bytes", typ, v)
			}
		}
	}
}

// TestEncodeFrameInPlaceMatchesStreamEncoder: for objects of every size
// around the varint boundaries of the object's, the RawExtension's and the
// event's lengths (127/128 and 16383/16384 bytes), the cached object
// encoding is the response encoding and every event type's frame is the
// streaming encoder's, byte for byte. The first frame shares the object's
// allocation, the others copy; the shared object stays as it was, and the
// slices handed out have no spare capacity to append into.
func TestEncodeFrameInPlaceMatchesStreamEncoder(t *testing.T) {
	s := newSharedTestServer(t)
	tg := protobufTarget(t, s)
	objs := sizedConfigMaps(t, s, tg, 96, 160)
	for n, cm := range sizedConfigMaps(t, s, tg, 16350, 16420) {
		objs[n] = cm
	}
	requireVarintBoundaries(t, objs)
	for n, cm := range objs {
		for _, objectFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d-bytes/object-first=%v", n, objectFirst), func(t *testing.T) {
				obj := cm.DeepCopy() // a pointer of its own: nothing cached yet
				before := obj.DeepCopy()
				wantData, wantFrames := referenceEncoding(t, s, tg, obj)
				if objectFirst {
					data, err := s.encodeShared(tg, obj, corev1.SchemeGroupVersion)
					require.NoError(t, err)
					require.Equal(t, wantData, data)
				}
				var first []byte
				for i, typ := range frameEventTypes {
					frame, err := s.encodeEvent(tg, typ, obj, corev1.SchemeGroupVersion)
					require.NoError(t, err)
					require.Equal(t, wantFrames[typ], frame, string(typ))
					assert.Equal(t, len(frame), cap(frame))
					if i == 0 {
						first = frame
					}
				}
				data, err := s.encodeShared(tg, obj, corev1.SchemeGroupVersion)
				require.NoError(t, err)
				require.Equal(t, wantData, data)
				assert.Equal(t, len(data), cap(data))
				assert.Same(t, &data[0], &first[len(first)-len(data)], "the first frame is built in front of the object's bytes")
				for _, typ := range frameEventTypes[1:] {
					frame, err := s.encodeEvent(tg, typ, obj, corev1.SchemeGroupVersion)
					require.NoError(t, err)
					assert.NotSame(t, &data[0], &frame[len(frame)-len(data)], "%s: the room is claimed once", typ)
				}
				assert.Equal(t, wantFrames[frameEventTypes[0]], first, "framing the others left the first frame as it was")
				assert.Equal(t, wantData, data)
				assert.True(t, apiequality.Semantic.DeepEqual(before, obj), "the shared object was modified")
			})
		}
	}
}

// TestEncodeFrameFallbacks: objects taking the versioning encoder's path
// (another version, kind already set), event types too long for the room,
// and JSON (never framed in place) produce the same bytes as the
// reference encoders.
func TestEncodeFrameFallbacks(t *testing.T) {
	s := newSharedTestServer(t)
	for _, tc := range sharedEncodeTable {
		for _, info := range s.codecs.SupportedMediaTypes() {
			if info.StreamSerializer == nil {
				continue
			}
			t.Run(tc.name+"/"+info.MediaType, func(t *testing.T) {
				tg := target{info: info}
				want, err := s.encode(tg, tc.obj.DeepCopyObject(), tc.gv)
				if err != nil {
					_, err := s.encodeShared(tg, tc.obj.DeepCopyObject(), tc.gv)
					require.Error(t, err)
					return
				}
				obj := tc.obj.DeepCopyObject()
				long := watch.EventType(strings.Repeat("L", maxFramedType+1))
				for _, typ := range append([]watch.EventType{long}, frameEventTypes...) {
					var buf bytes.Buffer
					enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
					require.NoError(t, enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: want}}))
					got, err := s.encodeEvent(tg, typ, obj, tc.gv)
					require.NoError(t, err)
					assert.Equal(t, buf.String(), string(got), string(typ))
				}
				got, err := s.encodeShared(tg, obj, tc.gv)
				require.NoError(t, err)
				assert.Equal(t, string(want), string(got))
				if info.MediaType != runtime.ContentTypeProtobuf {
					e := s.sharedEntry(tg, obj, tc.gv)
					_, ok := e.frameInPlace(watch.Added)
					assert.False(t, ok, "only protobuf encodings have room")
				}
			})
		}
	}
}

// TestEncodeFrameConcurrentWatchers: watchers framing the same events
// concurrently, while write responses read the objects' encodings, all get
// the reference bytes (run with -race: the header is written next to bytes
// others read, never over them).
func TestEncodeFrameConcurrentWatchers(t *testing.T) {
	s := newSharedTestServer(t)
	tg := protobufTarget(t, s)
	type ref struct {
		obj    runtime.Object
		data   []byte
		frames map[watch.EventType][]byte
	}
	var refs []ref
	for n, cm := range sizedConfigMaps(t, s, tg, 120, 135) {
		cm.Data["i"] = fmt.Sprint(n)
		data, frames := referenceEncoding(t, s, tg, cm)
		refs = append(refs, ref{cm, data, frames})
	}
	const watchers = 16
	errs := make(chan error, watchers)
	var wg sync.WaitGroup
	for w := range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, r := range refs {
				typ := frameEventTypes[(w+i)%len(frameEventTypes)]
				frame, err := s.encodeEvent(tg, typ, r.obj, corev1.SchemeGroupVersion)
				if err == nil && !bytes.Equal(frame, r.frames[typ]) {
					err = fmt.Errorf("watcher %d, object %d, %s: frame differs", w, i, typ)
				}
				if err != nil {
					errs <- err
					return
				}
				data, err := s.encodeShared(tg, r.obj, corev1.SchemeGroupVersion)
				if err == nil && !bytes.Equal(data, r.data) {
					err = fmt.Errorf("watcher %d, object %d: encoding differs", w, i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestFrameRoomFitsLargestHeader: frameRoom is the header of the longest
// event type around the largest object a frame can carry, and smaller
// objects need no more.
func TestFrameRoomFitsLargestHeader(t *testing.T) {
	largest := math.MaxUint32 - 22 // event = n + 22 bytes at 5-byte varints
	event, header := frameSizes(maxFramedType, largest)
	assert.Equal(t, uint64(math.MaxUint32), uint64(event))
	assert.Equal(t, frameRoom, header)
	for _, n := range []int{1, 127, 128, 16383, 16384, 1 << 21, 1 << 28} {
		for _, typ := range frameEventTypes {
			assert.LessOrEqual(t, 0, frameRoom, "%d", n)
			_, h := frameSizes(len(typ), n)
			assert.LessOrEqual(t, h, frameRoom, "%s, %d bytes", typ, n)
		}
	}
	for _, typ := range frameEventTypes {
		assert.LessOrEqual(t, len(typ), maxFramedType, string(typ))
	}
}

// allocEncoder is a runtime.EncoderWithAllocator writing chunks, each
// either into memory from the allocator or from its own slice.
type allocEncoder struct {
	chunks    []string
	allocated []bool
	err       error
}

func (e allocEncoder) Encode(obj runtime.Object, w io.Writer) error {
	return errors.New("allocEncoder encodes with an allocator")
}

func (e allocEncoder) Identifier() runtime.Identifier { return "alloc-test" }

func (e allocEncoder) EncodeWithAllocator(_ runtime.Object, w io.Writer, a runtime.MemoryAllocator) error {
	for i, c := range e.chunks {
		p := []byte(c)
		if e.allocated[i] {
			p = a.Allocate(uint64(len(c)) + 3)[:len(c)] // estimates run over
			copy(p, c)
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return e.err
}

// TestEncodeAllocated: the encoder's one write into its allocation is kept
// with the room in front; anything else is copied, and the result is
// always exactly what was written.
func TestEncodeAllocated(t *testing.T) {
	c := newEncodeCache(4)
	for _, tc := range []struct {
		name      string
		enc       allocEncoder
		want      string
		kept      bool
		wantError bool
	}{
		{"one allocated write", allocEncoder{chunks: []string{"abc"}, allocated: []bool{true}}, "abc", true, false},
		{"own slice", allocEncoder{chunks: []string{"abc"}, allocated: []bool{false}}, "abc", false, false},
		{"two allocated writes", allocEncoder{chunks: []string{"ab", "cd"}, allocated: []bool{true, true}}, "abcd", false, false},
		{"allocated then own", allocEncoder{chunks: []string{"ab", "cd"}, allocated: []bool{true, false}}, "abcd", false, false},
		{"own then allocated", allocEncoder{chunks: []string{"ab", "cd"}, allocated: []bool{false, true}}, "abcd", false, false},
		{"empty write first", allocEncoder{chunks: []string{"", "ab"}, allocated: []bool{false, true}}, "ab", true, false},
		{"error", allocEncoder{chunks: []string{"ab"}, allocated: []bool{true}, err: errors.New("boom")}, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.encodeAllocated(tc.enc, nil, frameRoom)
			if tc.wantError {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got.data))
			assert.Equal(t, len(got.data), cap(got.data))
			if tc.kept {
				require.Len(t, got.buf, frameRoom+len(tc.want))
				assert.Same(t, &got.data[0], &got.buf[frameRoom])
			} else {
				assert.Equal(t, string(got.data), string(got.buf), "no room")
			}
		})
	}
}

// TestProtoViewLeavesObject: the protobuf view of a shared object carries
// the kind itself; the object's TypeMeta is never written, and the view's
// copy is independent of both.
func TestProtoViewLeavesObject(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	v := &protoView{obj: pod, kind: gvk}
	assert.Equal(t, gvk, v.GetObjectKind().GroupVersionKind())
	v.GetObjectKind().SetGroupVersionKind(gvk.GroupVersion().WithKind("Other"))
	assert.Empty(t, pod.Kind)
	cp := v.DeepCopyObject().(*protoView)
	cp.obj.(*corev1.Pod).Name = "q"
	assert.Equal(t, "p", pod.Name)
	assert.Equal(t, "Other", cp.kind.Kind)
	want, err := pod.Marshal()
	require.NoError(t, err)
	got := make([]byte, v.Size())
	n, err := v.MarshalToSizedBuffer(got)
	require.NoError(t, err)
	assert.Equal(t, want, got[len(got)-n:])
	n, err = v.MarshalTo(got)
	require.NoError(t, err)
	assert.Equal(t, want, got[:n])
}
