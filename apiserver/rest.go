package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/fieldmanager"
	"github.com/podkit/podkit/apiserver/storage"
)

// serveResource dispatches a parsed resource request to its verb handler and
// records it in the metrics.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) {
	start := time.Now()
	rec, ok := w.(*statusRecorder)
	if !ok {
		rec = &statusRecorder{ResponseWriter: w}
	}
	scope := "cluster"
	if info.Name != "" {
		scope = "resource"
	} else if info.Namespace != "" {
		scope = "namespace"
	}
	defer func() {
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		if info.Verb != "watch" {
			s.metrics.observe(info, scope, code, time.Since(start).Seconds())
		}
	}()
	if err := s.checkScope(res, info); err != nil {
		s.writeError(rec, r, err)
		return
	}
	ctx := r.Context()
	if auth.UserFrom(ctx) == nil {
		ctx = auth.WithUser(ctx, &auth.DefaultUser{Name: "system:admin", Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}})
		r = r.WithContext(ctx)
	}
	var err error
	switch info.Subresource {
	case "":
		err = s.serveMain(rec, r, res, info)
	case "status", "finalize":
		err = s.serveStatus(rec, r, res, info)
	case "scale":
		err = s.serveScale(rec, r, res, info)
	case "binding":
		err = s.serveBinding(rec, r, res, info)
	case "log":
		err = s.servePodLog(rec, r, res, info)
	case "token":
		err = s.serveToken(rec, r, info)
	default:
		err = notFoundPath(r)
	}
	if err != nil {
		s.writeError(rec, r, err)
	}
}

// checkScope rejects requests whose URL does not fit the resource's scope
// or verbs.
func (s *Server) checkScope(res *Resource, info requestInfo) error {
	if !res.Namespaced && info.Namespace != "" {
		return newStatusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource", "")
	}
	if info.Subresource != "" && !res.HasSubresource(info.Subresource) {
		return newStatusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource", "")
	}
	if res.Namespaced && info.Namespace == "" {
		switch info.Verb {
		case "list", "watch":
		default:
			return newStatusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource", "")
		}
	}
	if info.Subresource == "" && !res.AllowsVerb(info.Verb) {
		return errMethodNotAllowed
	}
	return nil
}

func (s *Server) serveMain(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	switch info.Verb {
	case "get":
		return s.get(w, r, res, info)
	case "list":
		return s.list(w, r, res, info)
	case "watch":
		return s.watch(w, r, res, info)
	case "create":
		return s.create(w, r, res, info)
	case "update":
		return s.update(w, r, res, info)
	case "patch":
		return s.patch(w, r, res, info)
	case "delete":
		return s.delete(w, r, res, info)
	case "deletecollection":
		return s.deleteCollection(w, r, res, info)
	}
	return errMethodNotAllowed
}

// errMethodNotAllowed is kube-apiserver's 405 for a verb a resource does not serve.
var errMethodNotAllowed = newStatusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
	"the server does not allow this method on the requested resource", "")

// key returns the storage key of a request's object.
func key(res *Resource, namespace, name string) string {
	return storage.Key(res.GroupResource(), namespace, name)
}

// readBody reads a request body within the size cap.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	data, err := readAll(r.Body, r.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", tooBig.Limit))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	return data, nil
}

// readAll reads body, whose declared length is n (-1: unknown), in one
// allocation when n is known and plausible (the body limit still applies:
// body is wrapped by it), else as io.ReadAll does.
func readAll(body io.Reader, n int64) ([]byte, error) {
	if n <= 0 || n > 64<<20 {
		return io.ReadAll(body)
	}
	data := make([]byte, n, n+1)
	if _, err := io.ReadFull(body, data); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("body shorter than its Content-Length %d: %w", n, err)
		}
		return nil, err
	}
	// A body longer than it said: read the rest too, as io.ReadAll would.
	var one [1]byte
	switch k, err := body.Read(one[:]); {
	case k == 1:
		rest, err := io.ReadAll(body)
		return append(append(data, one[0]), rest...), err
	case err != nil && err != io.EOF:
		return nil, err
	}
	return data, nil
}

// get serves GET of one object.
func (s *Server) get(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r, asTable, asPartial)
	if err != nil {
		return err
	}
	obj, err := s.storeFor(res).Get(r.Context(), key(res, info.Namespace, info.Name))
	if err != nil {
		return storageError(err, res.GroupResource(), info.Name)
	}
	return s.respond(w, r, http.StatusOK, t, res, obj)
}

// respond writes obj in the negotiated representation: the object itself, a
// Table, or PartialObjectMetadata(List).
func (s *Server) respond(w http.ResponseWriter, r *http.Request, code int, t target, res *Resource, obj runtime.Object) error {
	out, gv, err := s.transform(r.Context(), r, t, res, obj)
	if err != nil {
		return err
	}
	s.writeObject(w, r, code, t, out, gv)
	return nil
}

// admit runs mutating admission, the object's validation, and validating
// admission, in that order.
func (s *Server) admit(ctx context.Context, a *admission.Attributes, validate func() error) error {
	a.User = auth.UserFrom(ctx)
	if err := s.chain.Admit(ctx, a); err != nil {
		return err
	}
	if validate != nil {
		if err := validate(); err != nil {
			return err
		}
	}
	return s.chain.Validate(ctx, a)
}

// finisher is optionally implemented by the admission chain to learn how
// an admitted write ended (see admission.Finisher).
type finisher interface {
	Finish(ctx context.Context, a *admission.Attributes, err error)
}

// finish reports the outcome of an admitted write to the chain.
func (s *Server) finish(ctx context.Context, a *admission.Attributes, err error) {
	if f, ok := s.chain.(finisher); ok && a != nil {
		f.Finish(ctx, a, err)
	}
}

// attributes builds admission attributes for a request.
func attributes(op admission.Operation, res *Resource, info requestInfo, obj, old runtime.Object, dryRun bool) *admission.Attributes {
	return &admission.Attributes{
		Operation:   op,
		Kind:        res.GroupVersionKind(),
		Resource:    res.GroupVersion.WithResource(res.Resource),
		Subresource: info.Subresource,
		Namespace:   info.Namespace,
		Name:        info.Name,
		Object:      obj,
		OldObject:   old,
		DryRun:      dryRun,
	}
}

// query returns the request's query parameters, nil (empty) when it has
// none: most writes carry none, and parsing an empty query still
// allocates a map.
func query(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	return r.URL.Query()
}

// isDryRun parses the dryRun parameter (only "All" is valid).
func isDryRun(r *http.Request) (bool, error) {
	values := query(r)["dryRun"]
	for _, v := range values {
		if v != "All" {
			return false, apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q; only 'All' is supported", v))
		}
	}
	return len(values) > 0, nil
}

// setListMeta fills a list's items and metadata.
func setList(list runtime.Object, items []runtime.Object, rv uint64, cont string, remaining *int64) error {
	if err := meta.SetList(list, items); err != nil {
		return err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	lm.SetResourceVersion(strconv.FormatUint(rv, 10))
	lm.SetContinue(cont)
	lm.SetRemainingItemCount(remaining)
	return nil
}

// writer identifies who makes a write, for managedFields.
func writer(r *http.Request, sub string) fieldmanager.UpdateOptions {
	return fieldmanager.UpdateOptions{FieldManager: query(r).Get("fieldManager"), UserAgent: r.UserAgent(), Subresource: sub}
}

// track records a write in obj's managedFields; kinds without a schema go
// untracked.
func (s *Server) track(ctx context.Context, live, obj runtime.Object, gvk schema.GroupVersionKind, opts fieldmanager.UpdateOptions) (runtime.Object, error) {
	out, err := s.fields.Update(ctx, live, obj, gvk, opts)
	if errors.Is(err, fieldmanager.ErrUnknownKind) {
		return obj, nil
	}
	return out, err
}
