package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// maxConflictRetries bounds the read-modify-write retries of one patch;
// beyond it the item is requeued with backoff.
const maxConflictRetries = 5

// restMappingError is a reference whose apiVersion/kind the server does not
// (yet) serve; the item is retried after the next discovery.
type restMappingError struct {
	apiVersion, kind string
	err              error
}

func (e *restMappingError) Error() string {
	return fmt.Sprintf("resolving %s %s: %v", e.apiVersion, e.kind, e.err)
}

func (e *restMappingError) Unwrap() error { return e.err }

// resolve maps apiVersion/kind to a resource and its scope, re-reading
// discovery once when the kind is unknown.
func (gc *GarbageCollector) resolve(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{apiVersion, kind, err}
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	mapping, err := gc.mapper.RESTMapping(gk, gv.Version)
	if err != nil {
		gc.mapper.Reset()
		if mapping, err = gc.mapper.RESTMapping(gk, gv.Version); err != nil {
			return schema.GroupVersionResource{}, false, &restMappingError{apiVersion, kind, err}
		}
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resourceFor returns the metadata client of id's resource, scoped to its
// namespace when the resource is namespaced, and whether it is.
func (gc *GarbageCollector) resourceFor(id objectReference) (metadata.ResourceInterface, bool, error) {
	gvr, namespaced, err := gc.resolve(id.APIVersion, id.Kind)
	if err != nil {
		return nil, false, err
	}
	ns := ""
	if namespaced {
		ns = id.Namespace
	}
	return gc.metadata.Resource(gvr).Namespace(ns), namespaced, nil
}

// getObject reads id live from the API server (never from a cache). A
// namespaced kind without a namespace can only come from a cluster-scoped
// dependent's reference: errNamespacedOwnerOfClusterScoped.
func (gc *GarbageCollector) getObject(ctx context.Context, id objectReference) (*metav1.PartialObjectMetadata, error) {
	res, namespaced, err := gc.resourceFor(id)
	if err != nil {
		return nil, err
	}
	if namespaced && id.Namespace == "" {
		return nil, fmt.Errorf("%s: %w", id, errNamespacedOwnerOfClusterScoped)
	}
	return res.Get(ctx, id.Name, metav1.GetOptions{})
}

// deleteObject deletes id with policy, on the precondition that it is
// still the object (UID) in the state (resourceVersion) that was verified.
func (gc *GarbageCollector) deleteObject(ctx context.Context, id objectReference, resourceVersion string, policy metav1.DeletionPropagation) error {
	res, _, err := gc.resourceFor(id)
	if err != nil {
		return err
	}
	uid := id.UID
	opts := metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion},
		PropagationPolicy: &policy,
	}
	err = res.Delete(ctx, id.Name, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s: %w", id, err)
	}
	return nil
}

// errUnchanged tells updateObject that there is nothing to write.
var errUnchanged = errors.New("no change")

// updateObject applies mutate to the live metadata of id and writes the
// result with a merge patch carrying the read resourceVersion (so a
// concurrent change makes it conflict and it is retried on the new
// state). A missing object, or one replaced by another UID, is not an
// error: there is nothing left to change.
func (gc *GarbageCollector) updateObject(ctx context.Context, id objectReference, mutate func(m *metav1.ObjectMeta) error) error {
	res, _, err := gc.resourceFor(id)
	if err != nil {
		return err
	}
	for range maxConflictRetries {
		cur, err := res.Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", id, err)
		}
		if cur.UID != id.UID {
			return nil
		}
		m := cur.ObjectMeta.DeepCopy()
		if err := mutate(m); errors.Is(err, errUnchanged) {
			return nil
		} else if err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": cur.ResourceVersion,
			"finalizers":      nonNil(m.Finalizers),
			"ownerReferences": nonNilRefs(m.OwnerReferences),
		}})
		if err != nil {
			return fmt.Errorf("encoding patch of %s: %w", id, err)
		}
		_, err = res.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			continue
		default:
			return fmt.Errorf("patching %s: %w", id, err)
		}
	}
	return fmt.Errorf("patching %s: still conflicting after %d attempts", id, maxConflictRetries)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilRefs(r []metav1.OwnerReference) []metav1.OwnerReference {
	if r == nil {
		return []metav1.OwnerReference{}
	}
	return r
}

// removeFinalizer removes finalizer from the live object id.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, id objectReference, finalizer string) error {
	return gc.updateObject(ctx, id, func(m *metav1.ObjectMeta) error {
		var kept []string
		for _, f := range m.Finalizers {
			if f != finalizer {
				kept = append(kept, f)
			}
		}
		if len(kept) == len(m.Finalizers) {
			return errUnchanged
		}
		m.Finalizers = kept
		return nil
	})
}

// removeOwnerReferences drops the references to the given owner UIDs from
// the live object id.
func (gc *GarbageCollector) removeOwnerReferences(ctx context.Context, id objectReference, owners ...types.UID) error {
	drop := map[types.UID]bool{}
	for _, u := range owners {
		drop[u] = true
	}
	return gc.updateObject(ctx, id, func(m *metav1.ObjectMeta) error {
		var kept []metav1.OwnerReference
		for _, r := range m.OwnerReferences {
			if !drop[r.UID] {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(m.OwnerReferences) {
			return errUnchanged
		}
		m.OwnerReferences = kept
		return nil
	})
}

// unblockOwnerReferences turns blockOwnerDeletion off in every reference
// of the live object id (breaking foreground deletion cycles).
func (gc *GarbageCollector) unblockOwnerReferences(ctx context.Context, id objectReference) error {
	return gc.updateObject(ctx, id, func(m *metav1.ObjectMeta) error {
		changed := false
		for i := range m.OwnerReferences {
			if boolValue(m.OwnerReferences[i].BlockOwnerDeletion) {
				f := false
				m.OwnerReferences[i].BlockOwnerDeletion = &f
				changed = true
			}
		}
		if !changed {
			return errUnchanged
		}
		return nil
	})
}
