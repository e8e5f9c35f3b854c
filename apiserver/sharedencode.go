package apiserver

import (
	"context"
	"net/http"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// Objects the store shares (watch events, the results of SharedWriter
// writes) must not be modified, and apimachinery's versioning encoder does
// modify what it encodes: it stamps the kind on the object for the
// duration of the call. Encoding a deep copy is safe but costs as much as a
// second decode. For a typed object already in the target version the
// encoder converts nothing; it only stamps the kind and hands the object to
// the serializer, which reads it. encodeView does the same on a shallow
// copy of the top-level struct (the serializer only reads what the copy
// shares with the original), producing the same bytes without touching the
// shared object or copying it deeply.

// encodeView encodes obj, which must not be modified, in group version gv
// with serializer ser.
func (s *Server) encodeView(ser runtime.Encoder, obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	enc, err := s.encodeViewRoom(ser, obj, gv, 0)
	return enc.data, err
}

// encodeViewRoom is encodeView keeping room free bytes in front of the
// encoding, in its allocation, when ser encodes with an allocator
// (protobuf): one allocation of the object's size plus room, which a watch
// frame's header may fill later (encodeEvent). Other serializers encode
// through the cache's pooled buffers, without room.
func (s *Server) encodeViewRoom(ser runtime.Encoder, obj runtime.Object, gv schema.GroupVersion, room int) (encoding, error) {
	alloc, allocating := ser.(runtime.EncoderWithAllocator)
	if gvk, ok := s.viewKind(obj, gv); ok {
		if p, ok := obj.(protoMarshaller); ok && allocating {
			return s.encoded.encodeAllocated(alloc, &protoView{obj: p, kind: gvk}, room)
		}
		data, err := s.encoded.encodeTo(ser, shallowCopy(obj, gvk))
		return encoding{buf: data, data: data}, err
	}
	cp := obj.DeepCopyObject()
	enc := s.encoderFor(ser, cp, gv)
	if allocating {
		if alloc, ok := enc.(runtime.EncoderWithAllocator); ok {
			return s.encoded.encodeAllocated(alloc, cp, room)
		}
	}
	data, err := s.encoded.encodeTo(enc, cp)
	return encoding{buf: data, data: data}, err
}

// protoMarshaller is what the protobuf serializer encodes an object with
// (every k8s.io/api type has both methods).
type protoMarshaller interface {
	runtime.Object
	runtime.ProtobufMarshaller
	runtime.ProtobufReverseMarshaller
}

// protoView is a shared object as the protobuf serializer sees it once the
// versioning encoder stamped kind on it: the serializer takes the kind for
// the runtime.Unknown envelope and marshals the object's fields, which do
// not include its TypeMeta. Where shallowCopy copies the object's top-level
// struct (a Pod's is a kilobyte) to hold the kind, protoView holds it next
// to a pointer to the object.
type protoView struct {
	obj  protoMarshaller
	kind schema.GroupVersionKind
}

func (v *protoView) GetObjectKind() schema.ObjectKind                { return v }
func (v *protoView) GroupVersionKind() schema.GroupVersionKind       { return v.kind }
func (v *protoView) SetGroupVersionKind(gvk schema.GroupVersionKind) { v.kind = gvk }
func (v *protoView) Size() int                                       { return v.obj.Size() }
func (v *protoView) MarshalTo(data []byte) (int, error)              { return v.obj.MarshalTo(data) }
func (v *protoView) MarshalToSizedBuffer(data []byte) (int, error) {
	return v.obj.MarshalToSizedBuffer(data)
}
func (v *protoView) DeepCopyObject() runtime.Object {
	return &protoView{obj: v.obj.DeepCopyObject().(protoMarshaller), kind: v.kind}
}

// viewKind returns the kind the versioning encoder would stamp on obj for
// gv, and false when encoding obj for gv is more than stamping a kind or
// obj is not a pointer to a struct: then the object is encoded from a
// copy, not from a view.
func (s *Server) viewKind(obj runtime.Object, gv schema.GroupVersion) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case runtime.Unstructured, *runtime.Unknown, runtime.NestedObjectEncoder, runtime.CacheableObject:
		return schema.GroupVersionKind{}, false
	}
	gvks, unversioned, err := s.scheme.ObjectKinds(obj)
	if err != nil || unversioned || len(gvks) == 0 {
		return schema.GroupVersionKind{}, false
	}
	target := gv
	if !hasGroupVersion(gvks, gv) {
		target = gvks[0].GroupVersion() // as encoderFor does
	}
	gvk, ok := target.KindForGroupVersionKinds(gvks)
	if !ok || !hasKind(gvks, gvk) {
		return schema.GroupVersionKind{}, false
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return schema.GroupVersionKind{}, false
	}
	return gvk, true
}

// shallowCopy copies obj's top-level struct (obj passed viewKind) and
// stamps gvk on the copy.
func shallowCopy(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	v := reflect.ValueOf(obj)
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	view := cp.Interface().(runtime.Object) // the same type as obj
	view.GetObjectKind().SetGroupVersionKind(gvk)
	return view
}

func hasGroupVersion(gvks []schema.GroupVersionKind, gv schema.GroupVersion) bool {
	for _, k := range gvks {
		if k.GroupVersion() == gv {
			return true
		}
	}
	return false
}

func hasKind(gvks []schema.GroupVersionKind, gvk schema.GroupVersionKind) bool {
	for _, k := range gvks {
		if k == gvk {
			return true
		}
	}
	return false
}

// respondShared is respond for an object the store shares. The plain
// representation goes through the encode cache, so that the watchers of
// the same media type reuse the response's bytes for the event.
func (s *Server) respondShared(w http.ResponseWriter, r *http.Request, code int, t target, res *Resource, obj runtime.Object) error {
	if t.as != "" {
		return s.respond(w, r, code, t, res, obj.DeepCopyObject())
	}
	data, err := s.encodeShared(t, obj, res.GroupVersion)
	if err != nil {
		return s.respond(w, r, code, t, res, obj.DeepCopyObject())
	}
	w.Header().Set("Content-Type", t.contentType())
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
	return nil
}

// createStored stores obj, returning the stored object and whether it is
// shared with the store (read-only) rather than the caller's copy. obj is
// handed over: a store that can keep it (storage.OwningWriter) does, so
// the caller must not modify it afterwards, whatever the outcome.
func createStored(ctx context.Context, st storage.Store, key string, obj runtime.Object) (runtime.Object, bool, error) {
	if ow, ok := st.(storage.OwningWriter); ok {
		out, err := ow.CreateOwned(ctx, key, obj)
		return out, true, err
	}
	if sw, ok := st.(storage.SharedWriter); ok {
		out, err := sw.CreateShared(ctx, key, obj)
		return out, true, err
	}
	out, err := st.Create(ctx, key, obj)
	return out, false, err
}

// updateStored is Store.Update for a caller that only reads the result,
// returning the stored object itself when the store can share it, and
// whether it does. tryUpdate must follow storage.OwningWriter's rules
// whatever the store: cur may be the stored object itself, so tryUpdate
// never modifies it, and what it returns is handed over (a new object on
// every call, or cur itself to change nothing). With a store that cannot
// keep it, cur is a copy and the result is copied again.
func updateStored(ctx context.Context, st storage.Store, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, bool, error) {
	if ow, ok := st.(storage.OwningWriter); ok {
		out, err := ow.UpdateOwned(ctx, key, tryUpdate)
		return out, true, err
	}
	if sw, ok := st.(storage.SharedWriter); ok {
		out, err := sw.UpdateShared(ctx, key, tryUpdate)
		return out, true, err
	}
	out, err := st.Update(ctx, key, tryUpdate)
	return out, false, err
}
