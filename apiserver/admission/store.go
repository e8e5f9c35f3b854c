package admission

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// The built-in plugins read the cluster's objects straight from storage
// through these small views of storage.Store (which implements them all).
// Stored objects are the typed k8s.io/api objects.
//
// Plugins only read what they look up (a namespace, a service account, the
// limit ranges or quotas of a namespace, for every create), so they ask for
// the objects the store keeps rather than copies: GetShared when the store
// is a storage.SharedReader, lists with ListOptions.ReadOnly. What getTyped,
// listAll and listTyped return is therefore shared with the store and every
// other reader: a plugin that needs to change it copies it first
// (LimitRanger defaults a copy of each range).

// ObjectGetter reads one stored object.
type ObjectGetter interface {
	Get(ctx context.Context, key string) (runtime.Object, error)
}

// ObjectLister lists the stored objects under a key prefix.
type ObjectLister interface {
	List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error)
}

// ObjectReader gets and lists stored objects.
type ObjectReader interface {
	ObjectGetter
	ObjectLister
}

// QuotaStore is what the ResourceQuota plugin needs: reads, and
// compare-and-swap updates of quota status.
type QuotaStore interface {
	ObjectReader
	Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error)
}

var _ QuotaStore = storage.Store(nil)

// Group resources the built-in plugins look up or recognise.
var (
	namespacesGR             = schema.GroupResource{Resource: "namespaces"}
	podsGR                   = schema.GroupResource{Resource: "pods"}
	servicesGR               = schema.GroupResource{Resource: "services"}
	serviceAccountsGR        = schema.GroupResource{Resource: "serviceaccounts"}
	limitRangesGR            = schema.GroupResource{Resource: "limitranges"}
	resourceQuotasGR         = schema.GroupResource{Resource: "resourcequotas"}
	persistentVolumeClaimsGR = schema.GroupResource{Resource: "persistentvolumeclaims"}
	priorityClassesGR        = schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}
	namespaceGK              = schema.GroupKind{Kind: "Namespace"}
)

// listAll returns every object under prefix, following continue tokens.
// The objects may be the store's own: read-only.
func listAll(ctx context.Context, s ObjectLister, prefix string) ([]runtime.Object, error) {
	var out []runtime.Object
	opts := storage.ListOptions{ReadOnly: true}
	for {
		res, err := s.List(ctx, prefix, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", prefix, err)
		}
		out = append(out, res.Items...)
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

// getShared reads key for a caller that does not modify the result: the
// stored object itself when s is a storage.SharedReader, else Get's copy.
func getShared(ctx context.Context, s ObjectGetter, key string) (runtime.Object, error) {
	if sr, ok := s.(storage.SharedReader); ok {
		return sr.GetShared(ctx, key)
	}
	return s.Get(ctx, key)
}

// getTyped reads key and asserts the stored object's type. found is false
// (with a nil error) when nothing is stored under key. The object may be
// the store's own (getShared): read-only.
func getTyped[T runtime.Object](ctx context.Context, s ObjectGetter, key string) (obj T, found bool, err error) {
	raw, err := getShared(ctx, s, key)
	if errors.Is(err, storage.ErrNotFound) {
		return obj, false, nil
	}
	if err != nil {
		return obj, false, fmt.Errorf("reading %s: %w", key, err)
	}
	typed, ok := raw.(T)
	if !ok {
		return obj, false, fmt.Errorf("reading %s: stored object is %T, want %T", key, raw, obj)
	}
	return typed, true, nil
}

// listTyped lists prefix and keeps the objects of type T, read-only as
// listAll's.
func listTyped[T runtime.Object](ctx context.Context, s ObjectLister, prefix string) ([]T, error) {
	raw, err := listAll(ctx, s, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(raw))
	for _, o := range raw {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
