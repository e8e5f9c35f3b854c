package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
)

// Impersonation headers, as kubectl --as, --as-group and --as-uid send them.
const (
	headerImpersonateUser       = "Impersonate-User"
	headerImpersonateGroup      = "Impersonate-Group"
	headerImpersonateUID        = "Impersonate-Uid"
	headerImpersonateExtraStart = "Impersonate-Extra-"

	serviceAccountUserPrefix = "system:serviceaccount:"
)

// withImpersonation lets a request act as another user, as
// kube-apiserver's impersonation filter does. The authenticated user
// needs the impersonate verb on every part of the new identity: users (or
// serviceaccounts for system:serviceaccount:<ns>:<name>), groups, uids
// and userextras/<key> (API group authentication.k8s.io for the last
// two). The request then goes on as the impersonated user — system:
// authenticated added (system:unauthenticated for system:anonymous), a
// service account's groups added when no group was named — with the
// Impersonate-* headers removed.
func (s *Server) withImpersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasImpersonation(r.Header) {
			next.ServeHTTP(w, r)
			return
		}
		requestor, r := requestUser(r)
		name := r.Header.Get(headerImpersonateUser)
		groups := r.Header.Values(headerImpersonateGroup)
		uid := r.Header.Get(headerImpersonateUID)
		extra := map[string][]string{}
		for h, values := range r.Header {
			if !strings.HasPrefix(h, headerImpersonateExtraStart) {
				continue
			}
			k, err := url.PathUnescape(strings.TrimPrefix(h, headerImpersonateExtraStart))
			if err != nil {
				s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("malformed extra key for impersonation request: %v", err)))
				return
			}
			k = strings.ToLower(k)
			extra[k] = append(extra[k], values...)
		}
		if name == "" {
			s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("requested impersonation of groups %v, uid %q or extra without impersonating a user", groups, uid)))
			return
		}
		checks := []auth.Attributes{}
		check := func(group, resource, namespace, objName, sub string) {
			checks = append(checks, auth.Attributes{User: requestor, Verb: "impersonate", ResourceRequest: true,
				APIGroup: group, Resource: resource, Namespace: namespace, Name: objName, Subresource: sub})
		}
		var impGroups []string
		if rest, ok := strings.CutPrefix(name, serviceAccountUserPrefix); ok && strings.Count(rest, ":") == 1 {
			ns, sa, _ := strings.Cut(rest, ":")
			check("", "serviceaccounts", ns, sa, "")
			if len(groups) == 0 {
				impGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
			}
		} else {
			check("", "users", "", name, "")
		}
		for _, g := range groups {
			check("", "groups", "", g, "")
		}
		for k, values := range extra {
			for _, v := range values {
				check("authentication.k8s.io", "userextras", "", v, k)
			}
		}
		if uid != "" {
			check("authentication.k8s.io", "uids", "", uid, "")
		}
		if s.cfg.Authorizer != nil {
			for _, a := range checks {
				d, reason, err := s.cfg.Authorizer.Authorize(r.Context(), a)
				if d == auth.DecisionAllow {
					continue
				}
				if err != nil {
					s.writeError(w, r, apierrors.NewInternalError(err))
					return
				}
				s.writeError(w, r, authz.Forbidden(a, reason))
				return
			}
		}
		impGroups = append(impGroups, groups...)
		impGroups = addAuthenticatedGroup(name, impGroups)
		if len(extra) == 0 {
			extra = nil
		}
		u := &auth.DefaultUser{Name: name, UID: uid, Groups: impGroups, Extra: extra}
		for h := range r.Header {
			if h == headerImpersonateUser || h == headerImpersonateGroup || h == headerImpersonateUID || strings.HasPrefix(h, headerImpersonateExtraStart) {
				r.Header.Del(h)
			}
		}
		s.log.Debug("impersonating", "requestor", requestor.GetName(), "user", name, "groups", impGroups)
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
	})
}

func hasImpersonation(h http.Header) bool {
	if len(h.Values(headerImpersonateUser)) > 0 || len(h.Values(headerImpersonateGroup)) > 0 || len(h.Values(headerImpersonateUID)) > 0 {
		return true
	}
	for k := range h {
		if strings.HasPrefix(k, headerImpersonateExtraStart) {
			return true
		}
	}
	return false
}

// addAuthenticatedGroup adds system:authenticated to an impersonated
// user's groups unless it is anonymous or already carries it or
// system:unauthenticated; anonymous gets system:unauthenticated.
func addAuthenticatedGroup(name string, groups []string) []string {
	want := auth.GroupAuthenticated
	if name == auth.UserAnonymous {
		want = auth.GroupUnauthenticated
	}
	for _, g := range groups {
		if g == want || (want == auth.GroupAuthenticated && g == auth.GroupUnauthenticated) {
			return groups
		}
	}
	return append(groups, want)
}
