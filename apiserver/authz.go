package apiserver

import (
	"context"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
)

// Authorization, the second half of step 2 of the birth sequence. Every
// request — resource or not — is described as auth.Attributes the way
// kube-apiserver's request-info resolver describes it, and handed to
// Config.Authorizer; anything it does not allow ends here with 403 (or 500
// when the authorizer failed without deciding). A nil Authorizer allows
// everything, which keeps embedders and in-process tests as they were.

// defaultUser is who a request is when no authentication stage put a user
// in its context: the server is then serving without authentication (an
// embedded or local-only server), and the request acts as the cluster
// administrator, as the REST layer has always assumed.
var defaultUser = &auth.DefaultUser{Name: "system:admin", Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}}

// requestUser returns the request's user, defaulting as above, and a
// request carrying it.
func requestUser(r *http.Request) (auth.User, *http.Request) {
	if u := auth.UserFrom(r.Context()); u != nil {
		return u, r
	}
	return defaultUser, r.WithContext(auth.WithUser(r.Context(), defaultUser))
}

// withAuthorization asks the authorizer about every request.
func (s *Server) withAuthorization(next http.Handler) http.Handler {
	if s.cfg.Authorizer == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, r := requestUser(r)
		attrs := requestAttributes(r, u)
		d, reason, err := s.cfg.Authorizer.Authorize(r.Context(), attrs)
		if d == auth.DecisionAllow {
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			s.log.Warn("authorization failed", "user", u.GetName(), "verb", attrs.Verb, "path", r.URL.Path, "err", err)
			s.writeError(w, r, apierrors.NewInternalError(err))
			return
		}
		s.log.Debug("forbidden", "user", u.GetName(), "verb", attrs.Verb, "path", r.URL.Path, "reason", reason)
		s.writeError(w, r, authz.Forbidden(attrs, reason))
	})
}

// requestAttributes describes a request for authorization as
// kube-apiserver does: /api/v1/... and /apis/{g}/{v}/... paths naming a
// resource are resource requests with the API verb (get, list, watch,
// create, update, patch, delete, deletecollection); a list or watch
// narrowed to one object by a metadata.name field selector names it. All
// other paths — discovery (/api, /apis/{g}/{v}), /version, /healthz,
// /openapi — are non-resource requests whose verb is the lower-case HTTP
// method (HEAD counts as get).
func requestAttributes(r *http.Request, u auth.User) auth.Attributes {
	a := auth.Attributes{User: u}
	q := r.URL.Query()
	if info, ok := parseResourcePath(r.Method, r.URL.Path, q); ok && info.Resource != "" {
		a.ResourceRequest = true
		a.Verb = info.Verb
		a.APIGroup, a.APIVersion = info.GroupVersion.Group, info.GroupVersion.Version
		a.Namespace, a.Resource, a.Subresource, a.Name = info.Namespace, info.Resource, info.Subresource, info.Name
		if (a.Verb == "list" || a.Verb == "watch") && a.Name == "" {
			if sel, err := fields.ParseSelector(q.Get("fieldSelector")); err == nil {
				if name, found := sel.RequiresExactMatch("metadata.name"); found {
					a.Name = name
				}
			}
		}
		return a
	}
	a.Path = r.URL.Path
	a.Verb = strings.ToLower(r.Method)
	if r.Method == http.MethodHead {
		a.Verb = "get"
	}
	return a
}

// runAuthorizer starts the authorizer's watches (RBAC, Node) when it keeps
// any; the returned function waits for them to stop after ctx ends.
func (s *Server) runAuthorizer(ctx context.Context) (wait func()) {
	run, ok := s.cfg.Authorizer.(authz.Runner)
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run.Run(ctx)
	}()
	return func() { <-done }
}

// runAdmission starts Config.AdmissionWatches (the webhook configuration
// cache); the returned function waits for them to stop after ctx ends.
func (s *Server) runAdmission(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, run := range s.cfg.AdmissionWatches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	return wg.Wait
}

// withAdmissionWarnings lets admission plugins (PodSecurity's warn mode,
// webhooks) send Warning headers: their admission.AddWarning calls land in
// the response's headers, which are still unwritten while admission runs.
// Audit annotations go to a recorder an outer stage (the audit log)
// installed, if any.
func (s *Server) withAdmissionWarnings(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &warningRecorder{w: w, outer: admission.RecorderFrom(r.Context())}
		next.ServeHTTP(w, r.WithContext(admission.WithRecorder(r.Context(), rec)))
	})
}

// warningRecorder turns admission warnings into Warning headers and hands
// audit annotations to the recorder it wraps (nil: dropped).
type warningRecorder struct {
	w     http.ResponseWriter
	outer admission.Recorder
}

func (r *warningRecorder) AddWarning(msg string) { addWarning(r.w, msg) }

func (r *warningRecorder) AddAuditAnnotation(key, value string) {
	if r.outer != nil {
		r.outer.AddAuditAnnotation(key, value)
	}
}
