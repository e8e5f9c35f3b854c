package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/fieldmanager"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
)

// errNoop aborts a storage update whose result equals the stored object, so
// a no-op write neither bumps the resourceVersion nor wakes watchers. cur
// is the object to answer with; shared says it is the store's own
// (read-only), not a copy.
type errNoop struct {
	cur    runtime.Object
	shared bool
}

func (errNoop) Error() string { return "no change" }

// update serves PUT of an object (and of its status subresource).
func (s *Server) update(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, dry, obj, m, body, err := s.readWrite(w, r, res)
	if err != nil {
		return err
	}
	if m.GetName() != info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name))
	}
	if err := checkNamespace(res, m, info.Namespace); err != nil {
		return err
	}
	if err := fieldmanager.ValidateUpdateOptions(&metav1.UpdateOptions{FieldManager: r.URL.Query().Get("fieldManager")}); err != nil {
		return err
	}
	who := writer(r, info.Subresource)
	attempts := 0
	out, shared, err := s.updateShared(r.Context(), res, info, dry, func(cur runtime.Object) (runtime.Object, error) {
		// The first attempt writes the decoded body itself. It changes on
		// the way (admission, server fields) and is handed to the store:
		// a retry on a newer object starts from the client's object again,
		// decoded once more.
		in := obj
		if attempts++; attempts > 1 {
			var err error
			if in, err = s.decodeAgain(r, res, body, info.Namespace); err != nil {
				return nil, err
			}
		}
		return s.track(r.Context(), cur, in, res.GroupVersionKind(), who)
	})
	if err != nil {
		return err
	}
	if shared {
		return s.respondShared(w, r, http.StatusOK, t, res, out)
	}
	return s.respond(w, r, http.StatusOK, t, res, out)
}

// updateShared is the shared read-modify-write of PUT, PATCH and the
// subresources: produce builds the new object from the current one, then
// mutating admission, server fields, validation and validating admission
// run on it, all inside the store's compare-and-swap loop. It returns the
// stored object and whether it is the store's own (shared: read-only)
// rather than a copy.
//
// Ownership (storage.OwningWriter): cur may be the stored object itself,
// shared with every reader. Neither produce nor anything after it
// (admission's OldObject, prepareForUpdate, validation, allocation, the
// no-op check) modifies cur or anything reachable from it; the object
// produce returns is new on every call (a retry on a newer object calls
// it again) and may share parts with cur only where nothing changes them.
// That object is handed to the store, unless the write is a no-op or a dry
// run.
func (s *Server) updateShared(ctx context.Context, res *Resource, info requestInfo, dry bool, produce func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, bool, error) {
	k := key(res, info.Namespace, info.Name)
	st := s.storeFor(res)
	_, owning := st.(storage.OwningWriter) // cur is the stored object
	var last *admission.Attributes
	var alloc *servicealloc.Txn // the current attempt's Service allocations
	tryUpdate := func(cur runtime.Object) (runtime.Object, error) {
		alloc.Revert() // a retry on a newer object starts over
		alloc = nil
		obj, err := produce(cur)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		cm, _ := meta.Accessor(cur)
		if m.GetResourceVersion() == "" {
			// Unconditional update: Kubernetes allows it for built-in types.
			m.SetResourceVersion(cm.GetResourceVersion())
		}
		a := attributes(admission.Update, res, info, obj, cur, dry)
		if last != nil {
			s.finish(ctx, last, errRetried)
		}
		last = a
		err = s.admit(ctx, a, func() error {
			s.prepareForUpdate(res, info.Subresource, obj, cur)
			if err := s.validateUpdate(res, info.Subresource, obj, cur); err != nil {
				return err
			}
			var err error
			alloc, err = s.allocateUpdate(ctx, res, info.Subresource, obj, cur, dry)
			return err
		})
		if err != nil {
			return nil, err
		}
		// Semantic equality, through the field manager's comparer: it
		// finds the change of a real write without walking the whole object.
		s.fields.IgnoreTimestampOnlyChanges(obj, cur)
		if m.GetResourceVersion() == cm.GetResourceVersion() && s.fields.Equal(obj, cur) {
			return nil, errNoop{cur: cur, shared: owning}
		}
		if dry {
			if m.GetResourceVersion() != cm.GetResourceVersion() {
				return nil, storageError(storage.ErrConflict, res.GroupResource(), info.Name)
			}
			return nil, errNoop{cur: obj}
		}
		return obj, nil
	}
	out, shared, err := updateStored(ctx, st, k, tryUpdate)
	s.finish(ctx, last, err)
	if err != nil {
		alloc.Revert()
	} else {
		alloc.Commit()
	}
	var noop errNoop
	if errors.As(err, &noop) {
		return noop.cur, noop.shared, nil
	}
	if err != nil {
		return nil, false, storageError(err, res.GroupResource(), info.Name)
	}
	done, err := s.finishDeletionIfDone(ctx, res, out)
	return done, shared, err
}

// finishDeletionIfDone removes an object whose deletion was waiting only on
// finalizers that are now all gone (and, for pods, whose grace period has
// been confirmed as zero by the kubelet).
func (s *Server) finishDeletionIfDone(ctx context.Context, res *Resource, obj runtime.Object) (runtime.Object, error) {
	if !deletionComplete(res, obj) {
		return obj, nil
	}
	m, _ := meta.Accessor(obj)
	uid := m.GetUID()
	out, err := s.storeFor(res).Delete(ctx, key(res, m.GetNamespace(), m.GetName()), func(cur runtime.Object) error {
		cm, _ := meta.Accessor(cur)
		if cm.GetUID() != uid || !deletionComplete(res, cur) {
			return errNotDone
		}
		return nil
	})
	if errors.Is(err, errNotDone) {
		return obj, nil
	}
	if err != nil {
		return obj, nil //nolint:nilerr // a concurrent writer or deleter took over; the update itself succeeded
	}
	s.afterDelete(res, out)
	return out, nil
}

// errRetried tells admission that an attempt was superseded by a retry on
// a newer object.
var errRetried = errors.New("update retried on a newer object")

var errNotDone = errors.New("deletion not complete")

// deletionComplete reports an object marked for deletion with nothing left
// to wait for.
func deletionComplete(res *Resource, obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return false
	}
	if res.GracefulDelete {
		g := m.GetDeletionGracePeriodSeconds()
		return g != nil && *g == 0
	}
	return true
}
