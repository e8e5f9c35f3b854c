package apiserver

import (
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
)

// patchType returns the request's patch type from its Content-Type.
func (s *Server) patchType(r *http.Request) (types.PatchType, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return "", s.unsupportedPatch()
	}
	switch pt := types.PatchType(mt); pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		return pt, nil
	}
	return "", s.unsupportedPatch()
}

func (s *Server) unsupportedPatch() error {
	return newStatusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
			types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType), "")
}

// patch serves PATCH with JSON patch, JSON merge patch and strategic merge
// patch. The patch is applied to the latest stored object inside the
// store's compare-and-swap loop, so concurrent writers never lose updates.
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
	body, err := readBody(r)
	if err != nil {
		return err
	}
	gvk := res.GroupVersionKind()
	out, err := s.updateObject(r.Context(), res, info, dry, func(cur runtime.Object) (runtime.Object, error) {
		return s.applyPatch(w, r, pt, body, cur, gvk, res.New)
	})
	if err != nil {
		return err
	}
	return s.respond(w, r, http.StatusOK, t, res, out)
}

// applyPatch applies a patch to cur (encoded as JSON in gvk) and decodes the
// result as a new object, honouring fieldValidation.
func (s *Server) applyPatch(w http.ResponseWriter, r *http.Request, pt types.PatchType, patch []byte, cur runtime.Object, gvk schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, error) {
	curJSON, err := s.encode(target{info: s.jsonInfo}, cur, gvk.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
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
