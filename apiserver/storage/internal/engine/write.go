package engine

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// Create implements storage.Store.
func (e *Engine) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	out, err := e.CreateShared(ctx, key, obj)
	if err != nil {
		return nil, err
	}
	return out.DeepCopyObject(), nil
}

// CreateShared implements storage.SharedWriter: Create without the copy of
// the result.
func (e *Engine) CreateShared(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return e.create(ctx, key, obj, false)
}

// CreateOwned implements storage.OwningWriter: CreateShared keeping obj
// itself (or, with CanonicalData, the canonical object built from it).
func (e *Engine) CreateOwned(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return e.create(ctx, key, obj, true)
}

// create stores obj, or the engine's copy of it unless owned.
func (e *Engine) create(ctx context.Context, key string, obj runtime.Object, owned bool) (runtime.Object, error) {
	if err := e.usable(ctx); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("key %q: %w: nil object", key, storage.ErrInvalidObject)
	}
	rv, err := storage.Revision(obj)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", key, err)
	}
	if rv != 0 {
		return nil, fmt.Errorf("key %q: %w: resourceVersion should not be set on objects to be created", key, storage.ErrInvalidObject)
	}
	cp, data, err := e.prepare(key, obj, owned)
	if err != nil {
		return nil, err
	}
	return e.commit(&request{kind: opCreate, key: key, obj: cp, data: data})
}

// Update implements storage.Store. An update whose result equals the stored
// object (apimachinery's semantic equality, ignoring TypeMeta and
// resourceVersion, after Canonical) writes nothing: the stored object is
// returned with its current revision and no event is emitted, as
// Kubernetes does for no-op updates.
func (e *Engine) Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	out, err := e.UpdateShared(ctx, key, tryUpdate)
	if err != nil {
		return nil, err
	}
	return out.DeepCopyObject(), nil
}

// UpdateShared implements storage.SharedWriter: Update without the copy of
// the result.
func (e *Engine) UpdateShared(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return e.update(ctx, key, tryUpdate, false)
}

// UpdateOwned implements storage.OwningWriter: tryUpdate gets the stored
// object itself, and what it returns is stored without a copy (with
// CanonicalData: the canonical object built from it).
func (e *Engine) UpdateOwned(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return e.update(ctx, key, tryUpdate, true)
}

// update is the compare-and-swap loop of UpdateShared (owned false:
// tryUpdate gets a copy of the stored object and its result is copied) and
// UpdateOwned (no copies).
func (e *Engine) update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error), owned bool) (runtime.Object, error) {
	for {
		if err := e.usable(ctx); err != nil {
			return nil, err
		}
		cur, err := e.current(key)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
		}
		in := cur.Obj
		if !owned {
			in = in.DeepCopyObject()
		}
		out, err := tryUpdate(in)
		if err != nil {
			return nil, err
		}
		if out == nil {
			return nil, fmt.Errorf("key %q: %w: tryUpdate returned no object", key, storage.ErrInvalidObject)
		}
		if out == cur.Obj {
			// Owned: the stored object itself, which tryUpdate must not
			// have modified, comes back unchanged. (Not owned, out is
			// never cur.Obj.)
			return cur.Obj, nil
		}
		rv, err := storage.Revision(out)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		if rv != 0 && rv != cur.Rev {
			return nil, fmt.Errorf("key %q: %w: resourceVersion %d, current %d", key, storage.ErrConflict, rv, cur.Rev)
		}
		cp, data, err := e.prepare(key, out, owned)
		if err != nil {
			return nil, err
		}
		// For the no-op check; on a commit, build stamps the new revision.
		if err := storage.SetRevision(cp, cur.Rev); err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		if e.same.unchanged(cur.Obj, cp) {
			return cur.Obj, nil
		}
		stored, err := e.commit(&request{kind: opUpdate, key: key, obj: cp, data: data, expect: cur.Rev})
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return stored, nil
	}
}

// Delete implements storage.Store. The precondition runs on the latest
// object; when another write lands between it and the delete, it runs
// again on the newer object.
func (e *Engine) Delete(ctx context.Context, key string, precondition func(cur runtime.Object) error) (runtime.Object, error) {
	for {
		if err := e.usable(ctx); err != nil {
			return nil, err
		}
		cur, err := e.current(key)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
		}
		if precondition != nil {
			if err := precondition(cur.Obj.DeepCopyObject()); err != nil {
				return nil, err
			}
		}
		gone, err := e.commit(&request{kind: opDelete, key: key, expect: cur.Rev})
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return gone.DeepCopyObject(), nil
	}
}

// prepare returns the object to store for obj, as the backend stores it,
// and its encoding when the backend's CanonicalData gives one. It is the
// engine's own copy of obj unless owned (obj was handed over: it is
// stored as it is, or given to Canonical, which may reuse it). A
// Canonical that builds a new object already makes the copy.
func (e *Engine) prepare(key string, obj runtime.Object, owned bool) (runtime.Object, []byte, error) {
	var (
		out  runtime.Object
		data []byte
		err  error
	)
	switch {
	case e.canonicalData != nil:
		out, data, err = e.canonicalData(obj)
	case e.canonical == nil && owned:
		return obj, nil, nil
	case e.canonical == nil:
		return obj.DeepCopyObject(), nil, nil
	case e.canonicalCopies || owned:
		out, err = e.canonical(obj)
	default:
		out, err = e.canonical(obj.DeepCopyObject())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("key %q: %w: %w", key, storage.ErrInvalidObject, err)
	}
	return out, data, nil
}
