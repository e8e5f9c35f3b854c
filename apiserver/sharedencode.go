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
	if view := s.kindedView(obj, gv); view != nil {
		return s.encoded.encodeTo(ser, view)
	}
	cp := obj.DeepCopyObject()
	return s.encoded.encodeTo(s.encoderFor(ser, cp, gv), cp)
}

// kindedView returns a shallow copy of obj with the kind the versioning
// encoder would stamp on it for gv, or nil when encoding obj for gv is more
// than stamping a kind (another version, an unversioned or unstructured
// object, nested objects).
func (s *Server) kindedView(obj runtime.Object, gv schema.GroupVersion) runtime.Object {
	switch obj.(type) {
	case runtime.Unstructured, *runtime.Unknown, runtime.NestedObjectEncoder, runtime.CacheableObject:
		return nil
	}
	gvks, unversioned, err := s.scheme.ObjectKinds(obj)
	if err != nil || unversioned || len(gvks) == 0 {
		return nil
	}
	target := gv
	if !hasGroupVersion(gvks, gv) {
		target = gvks[0].GroupVersion() // as encoderFor does
	}
	gvk, ok := target.KindForGroupVersionKinds(gvks)
	if !ok || !hasKind(gvks, gvk) {
		return nil
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	view, ok := cp.Interface().(runtime.Object)
	if !ok {
		return nil
	}
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
// shared with the store (read-only) rather than the caller's copy.
func createStored(ctx context.Context, st storage.Store, key string, obj runtime.Object) (runtime.Object, bool, error) {
	if sw, ok := st.(storage.SharedWriter); ok {
		out, err := sw.CreateShared(ctx, key, obj)
		return out, true, err
	}
	out, err := st.Create(ctx, key, obj)
	return out, false, err
}

// updateStored is Store.Update for a caller that only reads the result:
// the stored object itself when the store can share it.
func updateStored(ctx context.Context, st storage.Store, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	if sw, ok := st.(storage.SharedWriter); ok {
		return sw.UpdateShared(ctx, key, tryUpdate)
	}
	return st.Update(ctx, key, tryUpdate)
}
