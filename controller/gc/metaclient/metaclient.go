// Package metaclient provides a metadata.Interface (client-go's
// PartialObjectMetadata client) for API servers that cannot serve the
// as=PartialObjectMetadata representation: FromDynamic answers the same
// calls through a dynamic (unstructured, full object) client and keeps only
// the metadata. ForConfig probes the server once and returns the real
// metadata client when the server supports it.
//
// The garbage collector and the namespace controller are written against
// metadata.Interface, which is what Kubernetes uses (metadata is all they
// read, and the wire format is a fraction of the objects'); this package
// only bridges servers that lack the metadata representation.
package metaclient

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// FromDynamic returns a metadata.Interface answering through d.
func FromDynamic(d dynamic.Interface) metadata.Interface { return &client{d: d} }

var _ metadata.Interface = (*client)(nil)

type client struct{ d dynamic.Interface }

func (c *client) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return &resource{r: c.d.Resource(gvr)}
}

type resource struct {
	r  dynamic.NamespaceableResourceInterface
	ns string
}

func (r *resource) Namespace(ns string) metadata.ResourceInterface {
	return &resource{r: r.r, ns: ns}
}

func (r *resource) iface() dynamic.ResourceInterface {
	if r.ns == "" {
		return r.r
	}
	return r.r.Namespace(r.ns)
}

func (r *resource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	return r.iface().Delete(ctx, name, opts, sub...)
}

func (r *resource) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	return r.iface().DeleteCollection(ctx, opts, list)
}

func (r *resource) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := r.iface().Get(ctx, name, opts, sub...)
	if err != nil {
		return nil, err
	}
	return toPartial(u)
}

func (r *resource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	ul, err := r.iface().List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: ul.GetResourceVersion(), Continue: ul.GetContinue(), RemainingItemCount: ul.GetRemainingItemCount()},
	}
	out.Items = make([]metav1.PartialObjectMetadata, 0, len(ul.Items))
	for i := range ul.Items {
		pm, err := toPartial(&ul.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *pm)
	}
	return out, nil
}

func (r *resource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := r.iface().Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if u, ok := ev.Object.(*unstructured.Unstructured); ok {
			if pm, err := toPartial(u); err == nil {
				ev.Object = pm
			}
		}
		return ev, true
	}), nil
}

func (r *resource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := r.iface().Patch(ctx, name, pt, data, opts, sub...)
	if err != nil {
		return nil, err
	}
	return toPartial(u)
}

// toPartial keeps u's type and object metadata.
func toPartial(u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	m, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return pm, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &pm.ObjectMeta); err != nil {
		return nil, fmt.Errorf("metaclient: converting metadata of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return pm, nil
}

// ForConfig returns the real metadata client when the server serves the
// PartialObjectMetadata representation (probed once, now, by listing
// namespaces, which always include "default"), and otherwise the
// dynamic-backed one. native reports which it chose; a failing probe is
// not an error, it selects the fallback.
func ForConfig(ctx context.Context, rc *rest.Config) (c metadata.Interface, native bool, err error) {
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, false, fmt.Errorf("metaclient: %w", err)
	}
	// The metadata client checks the object it gets is metadata; a server
	// without the representation answers an error or a full object.
	list, err := md.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, ns := range list.Items {
			if ns.Name == metav1.NamespaceDefault {
				return md, true, nil
			}
		}
	}
	d, derr := dynamic.NewForConfig(rc)
	if derr != nil {
		return nil, false, fmt.Errorf("metaclient: %w", derr)
	}
	return FromDynamic(d), false, nil
}
