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
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/fieldmanager"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
)

// maxGenerateNameAttempts bounds retries when a generated name collides.
const maxGenerateNameAttempts = 8

// create serves POST of a new object: decode, mutating admission, server
// fields, validation, validating admission, store — and 201 with the
// stored object.
func (s *Server) create(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	if res.Resource == "bindings" {
		return s.createBinding(w, r, info, "")
	}
	if review, ok := s.reviewHandler(res); ok {
		return review(w, r, res, info)
	}
	if res.GroupVersion == gvAuthentication {
		return s.createAuthenticationReview(w, r, res)
	}
	t, dry, obj, m, body, err := s.readWrite(w, r, res)
	if err != nil {
		return err
	}
	if err := checkNamespace(res, m, info.Namespace); err != nil {
		return err
	}
	if m.GetResourceVersion() != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	// Options without a fieldManager are valid: nothing else is checked.
	if fm := query(r).Get("fieldManager"); fm != "" {
		if err := fieldmanager.ValidateCreateOptions(&metav1.CreateOptions{FieldManager: fm}); err != nil {
			return err
		}
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// The last name was taken. Admission and the server changed
			// the object, and the store may have kept it: the next name
			// gets a fresh decoding of what the client sent.
			if obj, err = s.decodeAgain(r, res, body, info.Namespace); err != nil {
				return err
			}
		}
		if obj, err = s.track(r.Context(), nil, obj, res.GroupVersionKind(), writer(r, "")); err != nil {
			return err
		}
		if generated {
			tm, _ := meta.Accessor(obj)
			tm.SetName(tm.GetGenerateName() + utilrand.String(5))
		}
		// obj is handed over (createStored): nothing below modifies it.
		out, shared, err := s.createShared(r.Context(), res, info.Namespace, obj, dry)
		if generated && attempt < maxGenerateNameAttempts && apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return err
		}
		if shared {
			return s.respondShared(w, r, http.StatusCreated, t, res, out)
		}
		return s.respond(w, r, http.StatusCreated, t, res, out)
	}
}

// checkNamespace makes the object's namespace agree with the URL's.
func checkNamespace(res *Resource, m metav1.Object, urlNamespace string) error {
	if !res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	if ns := m.GetNamespace(); ns != "" && ns != urlNamespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	m.SetNamespace(urlNamespace)
	return nil
}

// createShared runs admission and validation on obj and stores it. A
// Service's cluster IP and node ports are reserved between validation and
// validating admission, and given back if the create fails. It returns
// the stored object and whether it is the store's own (shared: read-only)
// rather than a copy; a dry run returns obj.
//
// Unless dry, obj is handed to the store (createStored), whatever the
// outcome: the caller must not modify it afterwards, and nothing here
// does (admission's Finish and afterCreate only read).
func (s *Server) createShared(ctx context.Context, res *Resource, namespace string, obj runtime.Object, dry bool) (runtime.Object, bool, error) {
	m, _ := meta.Accessor(obj)
	info := requestInfo{Verb: "create", GroupVersion: res.GroupVersion, Resource: res.Resource, Namespace: namespace, Name: m.GetName()}
	a := attributes(admission.Create, res, info, obj, nil, dry)
	var alloc *servicealloc.Txn
	err := s.admit(ctx, a, func() error {
		s.prepareForCreate(res, obj)
		if err := s.validateCreate(res, obj); err != nil {
			return err
		}
		var err error
		alloc, err = s.allocateCreate(ctx, res, obj, dry)
		return err
	})
	if err != nil {
		alloc.Revert()
		s.finish(ctx, a, err)
		return nil, false, err
	}
	if dry {
		s.finish(ctx, a, nil)
		return obj, false, nil
	}
	out, shared, err := createStored(ctx, s.storeFor(res), key(res, namespace, m.GetName()), obj)
	s.finish(ctx, a, err)
	if err != nil {
		alloc.Revert()
		return nil, false, storageError(err, res.GroupResource(), m.GetName())
	}
	alloc.Commit()
	s.afterCreate(ctx, res, out)
	return out, shared, nil
}

// afterCreate gives a new namespace its default service account at once,
// so pods can be created right after their namespace (the service account
// controller keeps it there afterwards).
func (s *Server) afterCreate(ctx context.Context, res *Resource, obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	if err := s.ensureServiceAccount(ctx, ns.Name, "default"); err != nil {
		s.log.Warn("creating default service account", "namespace", ns.Name, "err", err)
	}
	if err := s.ensureRootCA(ctx, ns.Name); err != nil {
		s.log.Warn("publishing the root CA", "namespace", ns.Name, "err", err)
	}
}

// ensureServiceAccount creates a service account unless it exists.
func (s *Server) ensureServiceAccount(ctx context.Context, namespace, name string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	res := &Resource{GroupVersion: gvCore, Resource: "serviceaccounts"}
	s.prepareForCreate(res, sa)
	_, err := s.store.Create(ctx, storage.Key(schema.GroupResource{Resource: "serviceaccounts"}, namespace, name), sa)
	if err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("service account %s/%s: %w", namespace, name, err)
	}
	return nil
}

// readWrite reads what POST and PUT share: the response representation,
// dryRun, and the decoded body with its metadata, and the body itself, for
// a retry that must start again from what the client sent (decodeAgain).
func (s *Server) readWrite(w http.ResponseWriter, r *http.Request, res *Resource) (t target, dry bool, obj runtime.Object, m metav1.Object, body []byte, err error) {
	if t, err = s.negotiate(r); err != nil {
		return
	}
	if dry, err = isDryRun(r); err != nil {
		return
	}
	if body, err = readBody(r); err != nil {
		return
	}
	if obj, err = s.decodeBody(w, r, body, res.GroupVersionKind(), res.New()); err != nil {
		return
	}
	if m, err = meta.Accessor(obj); err != nil {
		err = apierrors.NewBadRequest(err.Error())
	}
	return
}

// decodeAgain decodes a request body once more, as readWrite and the
// namespace check did the first time, for a retry that must start from
// the client's object: the first attempt's object was changed by admission
// and the server, and may be the store's by now. Copying the object up
// front instead would cost every request a copy; decoding again costs
// only the retries. The first decoding already sent the warnings.
func (s *Server) decodeAgain(r *http.Request, res *Resource, body []byte, namespace string) (runtime.Object, error) {
	obj, err := s.decodeBody(warningsSent{}, r, body, res.GroupVersionKind(), res.New())
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := checkNamespace(res, m, namespace); err != nil {
		return nil, err
	}
	return obj, nil
}

// warningsSent is the ResponseWriter of a body decoded again: it drops the
// warnings the first decoding already added to the response.
type warningsSent struct{}

func (warningsSent) Header() http.Header         { return http.Header{} }
func (warningsSent) Write(p []byte) (int, error) { return len(p), nil }
func (warningsSent) WriteHeader(int)             {}
