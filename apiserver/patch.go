package apiserver

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podkit/podkit/apiserver/fieldmanager"
)

// patchType returns the request's patch type from its Content-Type.
func (s *Server) patchType(r *http.Request) (types.PatchType, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return "", s.unsupportedPatch()
	}
	switch pt := types.PatchType(mt); pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
		return pt, nil
	}
	return "", s.unsupportedPatch()
}

func (s *Server) unsupportedPatch() error {
	return newStatusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s",
			types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType), "")
}

// patch serves PATCH with JSON patch, JSON merge patch, strategic merge
// patch and server-side apply. The patch is applied to the latest stored
// object inside the store's compare-and-swap loop, so concurrent writers
// never lose updates; an apply to a missing object creates it.
func (s *Server) patch(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r)
	if err != nil {
		return err
	}
	pt, err := s.patchType(r)
	if err != nil {
		return err
	}
	dry, err := isDryRun(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	force := q.Get("force") == "true"
	opts := &metav1.PatchOptions{FieldManager: q.Get("fieldManager"), DryRun: q["dryRun"], FieldValidation: q.Get("fieldValidation")}
	if force {
		opts.Force = &force
	}
	if err := fieldmanager.ValidatePatchOptions(opts, pt); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	gvk := res.GroupVersionKind()
	who := writer(r, info.Subresource)
	var produce func(cur runtime.Object) (runtime.Object, error)
	var apply fieldmanager.ApplyOptions
	if pt == types.ApplyYAMLPatchType {
		directive, err := fieldValidation(r)
		if err != nil {
			return err
		}
		apply = fieldmanager.ApplyOptions{FieldManager: opts.FieldManager, Force: force, Subresource: info.Subresource, FieldValidation: directive}
		produce = func(cur runtime.Object) (runtime.Object, error) {
			return s.serverSideApply(r.Context(), w, cur, gvk, body, apply, info)
		}
	} else {
		produce = func(cur runtime.Object) (runtime.Object, error) {
			obj, err := s.applyPatch(w, r, pt, body, cur, gvk, res.New)
			if err != nil {
				return nil, err
			}
			return s.track(r.Context(), cur, obj, gvk, who)
		}
	}
	out, shared, err := s.updateShared(r.Context(), res, info, dry, produce)
	if pt == types.ApplyYAMLPatchType && info.Subresource == "" && apierrors.IsNotFound(err) {
		obj, err := s.serverSideApply(r.Context(), w, nil, gvk, body, apply, info)
		if err != nil {
			return err
		}
		if m, _ := meta.Accessor(obj); m.GetUID() != "" {
			return apierrors.NewConflict(res.GroupResource(), info.Name,
				fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", m.GetUID()))
		}
		created, shared, err := s.createShared(r.Context(), res, info.Namespace, obj, dry)
		if err != nil {
			return err
		}
		if shared {
			return s.respondShared(w, r, http.StatusCreated, t, res, created)
		}
		return s.respond(w, r, http.StatusCreated, t, res, created)
	}
	if err != nil {
		return err
	}
	if shared {
		return s.respondShared(w, r, http.StatusOK, t, res, out)
	}
	return s.respond(w, r, http.StatusOK, t, res, out)
}

// serverSideApply merges an apply configuration into cur (nil to create)
// and checks the result's identity against the URL.
func (s *Server) serverSideApply(ctx context.Context, w http.ResponseWriter, cur runtime.Object, gvk schema.GroupVersionKind, body []byte, opts fieldmanager.ApplyOptions, info requestInfo) (runtime.Object, error) {
	obj, warnings, err := s.fields.Apply(ctx, cur, gvk, body, opts)
	if err != nil {
		return nil, err
	}
	for _, msg := range warnings {
		addWarning(w, msg)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetName() != info.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name))
	}
	if ns := m.GetNamespace(); ns != "" && ns != info.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", ns, info.Namespace))
	}
	m.SetNamespace(info.Namespace)
	return obj, nil
}

// applyPatch applies a patch to cur (encoded as JSON in gvk) and decodes the
// result as a new object, honouring fieldValidation. cur is only read: it
// may be the store's own object (encodeView leaves it untouched, where the
// versioning encoder would stamp its kind on it).
func (s *Server) applyPatch(w http.ResponseWriter, r *http.Request, pt types.PatchType, patch []byte, cur runtime.Object, gvk schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, error) {
	curJSON, err := s.encodeView(s.jsonInfo.Serializer, cur, gvk.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("encoding %T as %s: %w", cur, s.jsonInfo.MediaType, err))
	}
	patched, err := patchJSON(pt, curJSON, patch, newObj)
	if err != nil {
		return nil, err
	}
	hdr := r.Clone(r.Context())
	hdr.Header.Set("Content-Type", "application/json")
	obj, err := s.decode(w, hdr, patched, gvk, newObj(), false)
	if err != nil {
		return nil, err
	}
	cm, _ := meta.Accessor(cur)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetName() != cm.GetName() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), cm.GetName()))
	}
	// The patched object lives where the URL says.
	m.SetNamespace(cm.GetNamespace())
	return obj, nil
}

// patchJSON applies a JSON, merge or strategic merge patch to a JSON
// document. The patch libraries panic on some malformed patches (a JSON
// patch replacing the root with no value, say): such a patch is the
// client's error, answered 422, not a server crash.
func patchJSON(pt types.PatchType, curJSON, patch []byte, newObj func() runtime.Object) (patched []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			patched, err = nil, newStatusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				fmt.Sprintf("the server rejected our request due to an error in our request: invalid patch: %v", p), "")
		}
	}()
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if patched, err = p.Apply(curJSON); err != nil {
			return nil, newStatusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, err.Error(), "")
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(curJSON, patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(curJSON, patch, newObj()); err != nil {
			if errors.Is(err, mergepatch.ErrBadJSONDoc) || errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList) ||
				errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys) || errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList) ||
				errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat) {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			return nil, newStatusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, err.Error(), "")
		}
	}
	return patched, nil
}
