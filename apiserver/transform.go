package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/printers"
	"github.com/podkit/podkit/apiserver/scheme"
)

// transform converts obj to the representation the client asked for with
// as=Table or as=PartialObjectMetadata(List), returning the object to encode
// and its group version.
func (s *Server) transform(ctx context.Context, r *http.Request, t target, res *Resource, obj runtime.Object) (runtime.Object, schema.GroupVersion, error) {
	switch t.as {
	case "":
		return obj, res.GroupVersion, nil
	case asTable:
		opts := &metav1.TableOptions{IncludeObject: metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))}
		switch opts.IncludeObject {
		case "":
			opts.IncludeObject = metav1.IncludeMetadata
		case metav1.IncludeMetadata, metav1.IncludeObject, metav1.IncludeNone:
		default:
			return nil, schema.GroupVersion{}, apierrors.NewBadRequest(fmt.Sprintf("includeObject: Unsupported value: %q", opts.IncludeObject))
		}
		table, err := s.cfg.Tables.ConvertToTable(ctx, obj, opts)
		if errors.Is(err, printers.ErrUnrecognizedIncludeObject) {
			return nil, schema.GroupVersion{}, apierrors.NewBadRequest(err.Error())
		}
		if errors.Is(err, printers.ErrNotConvertible) {
			return nil, schema.GroupVersion{}, newStatusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
				fmt.Sprintf("the resource %s does not support being converted to a Table", res.Resource), "")
		}
		if err != nil {
			return nil, schema.GroupVersion{}, apierrors.NewInternalError(err)
		}
		if err := printers.EncodeRowObjects(table, s.jsonInfo.Serializer); err != nil {
			return nil, schema.GroupVersion{}, apierrors.NewInternalError(err)
		}
		return table, scheme.MetaGroupVersion, nil
	case asPartial, asPartialList:
		if meta.IsListType(obj) {
			items, err := meta.ExtractList(obj)
			if err != nil {
				return nil, schema.GroupVersion{}, apierrors.NewInternalError(err)
			}
			out := &metav1.PartialObjectMetadataList{}
			if lm, err := meta.ListAccessor(obj); err == nil {
				out.ResourceVersion, out.Continue, out.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
			}
			for _, item := range items {
				if pm := partial(item); pm != nil {
					out.Items = append(out.Items, *pm)
				}
			}
			return out, scheme.MetaGroupVersion, nil
		}
		if pm := partial(obj); pm != nil {
			return pm, scheme.MetaGroupVersion, nil
		}
		return nil, schema.GroupVersion{}, apierrors.NewInternalError(fmt.Errorf("%T has no object metadata", obj))
	}
	return obj, res.GroupVersion, nil
}

// partial returns the object's metadata as PartialObjectMetadata.
func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	if oma, ok := obj.(metav1.ObjectMetaAccessor); ok { // every typed object
		if m, ok := oma.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return &metav1.PartialObjectMetadata{ObjectMeta: *m.DeepCopy()}
		}
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: acc.GetName(), GenerateName: acc.GetGenerateName(), Namespace: acc.GetNamespace(),
		UID: acc.GetUID(), ResourceVersion: acc.GetResourceVersion(), Generation: acc.GetGeneration(),
		CreationTimestamp: acc.GetCreationTimestamp(), DeletionTimestamp: acc.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: acc.GetDeletionGracePeriodSeconds(),
		Labels:                     acc.GetLabels(), Annotations: acc.GetAnnotations(), OwnerReferences: acc.GetOwnerReferences(),
		Finalizers: acc.GetFinalizers(), ManagedFields: acc.GetManagedFields(),
	}}
}
