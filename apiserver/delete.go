package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/storage"
)

// Finalizers the API server adds for a deletion's propagation policy; the
// garbage collector removes them.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

// deleteOptions reads DeleteOptions from the body, or from the query.
func (s *Server) deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		gvk := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		obj, _, err := s.codecs.UniversalDeserializer().Decode(body, &gvk, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding DeleteOptions: %v", err))
		}
		if o, ok := obj.(*metav1.DeleteOptions); ok {
			opts = o
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" && opts.GracePeriodSeconds == nil {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" && opts.PropagationPolicy == nil {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("orphanDependents"); v != "" && opts.OrphanDependents == nil { //nolint:staticcheck // still part of the API
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid orphanDependents %q", v))
		}
		opts.OrphanDependents = &b //nolint:staticcheck
	}
	opts.DryRun = append(opts.DryRun, q["dryRun"]...)
	for _, v := range opts.DryRun {
		if v != metav1.DryRunAll {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q; only 'All' is supported", v))
		}
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy: Unsupported value: %q", *p))
		}
		if opts.OrphanDependents != nil { //nolint:staticcheck
			return nil, apierrors.NewBadRequest("orphanDependents and deletionPropagation cannot be both set")
		}
	}
	return opts, nil
}

// delete serves DELETE of one object.
func (s *Server) delete(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r)
	if err != nil {
		return err
	}
	opts, err := s.deleteOptions(r)
	if err != nil {
		return err
	}
	out, deleted, err := s.deleteObject(r.Context(), res, info.Namespace, info.Name, opts)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents { //nolint:staticcheck
		code = http.StatusAccepted
	}
	return s.respond(w, r, code, t, res, out)
}

// deleteObject deletes one object with Kubernetes semantics: preconditions,
// admission, graceful deletion of pods, finalizers and propagation policy.
// deleted is false when the object was only marked (deletionTimestamp) and
// waits for finalizers or for its node.
func (s *Server) deleteObject(ctx context.Context, res *Resource, namespace, name string, opts *metav1.DeleteOptions) (out runtime.Object, deleted bool, err error) {
	k := key(res, namespace, name)
	gr := res.GroupResource()
	dry := len(opts.DryRun) > 0
	cur, err := s.storeFor(res).Get(ctx, k)
	if err != nil {
		return nil, false, storageError(err, gr, name)
	}
	if err := checkPreconditions(opts.Preconditions, cur, gr, name); err != nil {
		return nil, false, err
	}
	info := requestInfo{Verb: "delete", GroupVersion: res.GroupVersion, Resource: res.Resource, Namespace: namespace, Name: name}
	a := attributes(admission.Delete, res, info, nil, cur, dry)
	if err := s.admit(ctx, a, nil); err != nil {
		s.finish(ctx, a, err)
		return nil, false, err
	}
	defer func() { s.finish(ctx, a, err) }()
	if !s.needsMarking(res, cur, opts) {
		if dry {
			return cur, true, nil
		}
		out, err := s.storeFor(res).Delete(ctx, k, func(obj runtime.Object) error {
			if err := checkPreconditions(opts.Preconditions, obj, gr, name); err != nil {
				return err
			}
			if s.needsMarking(res, obj, opts) {
				return errMarkInstead
			}
			return nil
		})
		if !errors.Is(err, errMarkInstead) {
			if err != nil {
				return nil, false, storageError(err, gr, name)
			}
			s.afterDelete(res, out)
			return out, true, nil
		}
	}
	if dry {
		return cur, false, nil
	}
	out, err = s.storeFor(res).Update(ctx, k, func(obj runtime.Object) (runtime.Object, error) {
		if err := checkPreconditions(opts.Preconditions, obj, gr, name); err != nil {
			return nil, err
		}
		s.markForDeletion(res, obj, opts)
		return obj, nil
	})
	if err != nil {
		return nil, false, storageError(err, gr, name)
	}
	out, err = s.finishDeletionIfDone(ctx, res, out)
	if err != nil {
		return nil, false, err
	}
	m, _ := meta.Accessor(out)
	return out, m.GetDeletionTimestamp() == nil, nil
}

var errMarkInstead = errors.New("object must be marked for deletion")

// gracePeriod returns the grace period a deletion of obj gets: for pods the
// request's, else the pod's terminationGracePeriodSeconds, else 30; zero for
// pods never bound to a node or already finished, which have no kubelet to
// wait for. Other resources have none.
func gracePeriod(res *Resource, obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	if !res.GracefulDelete {
		return 0
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if grace < 0 {
		grace = 1
	}
	return grace
}

// needsMarking reports whether the deletion must go through a
// deletionTimestamp rather than removing the object now.
func (s *Server) needsMarking(res *Resource, obj runtime.Object, opts *metav1.DeleteOptions) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if len(m.GetFinalizers()) > 0 || propagationFinalizer(res, opts) != "" || gracePeriod(res, obj, opts) > 0 {
		return true
	}
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return true
	}
	return false
}

// propagationFinalizer is the finalizer a propagation policy asks for.
func propagationFinalizer(res *Resource, opts *metav1.DeleteOptions) string {
	if opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationOrphan:
			return finalizerOrphan
		case metav1.DeletePropagationForeground:
			return finalizerForeground
		}
		return ""
	}
	if opts.OrphanDependents != nil && *opts.OrphanDependents { //nolint:staticcheck
		return finalizerOrphan
	}
	return ""
}

// markForDeletion sets (or shortens) the deletionTimestamp and grace
// period, adds the propagation finalizer, and marks namespaces Terminating.
func (s *Server) markForDeletion(res *Resource, obj runtime.Object, opts *metav1.DeleteOptions) {
	m, _ := meta.Accessor(obj)
	grace := gracePeriod(res, obj, opts)
	now := s.now()
	deadline := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
	if ts := m.GetDeletionTimestamp(); ts == nil {
		m.SetDeletionTimestamp(&deadline)
		m.SetDeletionGracePeriodSeconds(&grace)
	} else if g := m.GetDeletionGracePeriodSeconds(); g == nil || grace < *g {
		// A second delete may only shorten the grace period.
		if deadline.Before(ts) {
			m.SetDeletionTimestamp(&deadline)
		}
		m.SetDeletionGracePeriodSeconds(&grace)
	}
	if f := propagationFinalizer(res, opts); f != "" && !contains(m.GetFinalizers(), f) {
		m.SetFinalizers(append(m.GetFinalizers(), f))
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
}

// checkPreconditions enforces DeleteOptions.Preconditions.
func checkPreconditions(p *metav1.Preconditions, obj runtime.Object, gr schema.GroupResource, name string) error {
	if p == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// deleteCollection serves DELETE of a collection: every object matching the
// selectors is deleted as a single DELETE would.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r)
	if err != nil {
		return err
	}
	opts, err := s.deleteOptions(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sel, err := parseSelection(res, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return err
	}
	result, err := s.storeFor(res).List(r.Context(), listPrefix(res, info), storage.ListOptions{Predicate: sel.predicate()})
	if err != nil {
		return storageError(err, res.GroupResource(), "")
	}
	var items []runtime.Object
	for _, obj := range result.Items {
		m, _ := meta.Accessor(obj)
		out, _, err := s.deleteObject(r.Context(), res, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		items = append(items, out)
	}
	list := res.NewList()
	rv, _ := s.store.CurrentRevision(r.Context())
	if err := setList(list, items, rv, "", nil); err != nil {
		return apierrors.NewInternalError(err)
	}
	return s.respond(w, r, http.StatusOK, t, res, list)
}
