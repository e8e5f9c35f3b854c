package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podkit/podkit/apiserver/auth"
)

// unsecuredUser is every request's identity when Config.Authenticator is
// nil: the embedded, test and pre-authentication behaviour.
var unsecuredUser auth.User = &auth.DefaultUser{Name: "system:admin", Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}}

// withAuthentication is step 2's first half: it finds out who is calling
// and puts the identity into the request's context (auth.UserFrom) for
// authorization, admission and the handlers.
//
//   - A request from an in-process component (internal/inproc) carries its
//     identity in the context (auth.InProcessUserFrom); it is trusted as
//     is, because only Go code in this process can set it.
//   - Otherwise Config.Authenticator decides. A request it does not
//     authenticate is answered 401 with the Status kube-apiserver sends
//     ("Unauthorized"); why is logged, never told to the client.
//   - With no Authenticator every request is system:admin in
//     system:masters, as before authentication existed.
//
// The Authorization header is removed once the request is authenticated,
// so no later stage (or a proxied kubelet) ever sees the credential.
func (s *Server) withAuthentication(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if u := auth.InProcessUserFrom(ctx); u != nil {
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r.WithContext(auth.WithUser(ctx, u)))
			return
		}
		if s.cfg.Authenticator == nil {
			if auth.UserFrom(ctx) == nil {
				r = r.WithContext(auth.WithUser(ctx, unsecuredUser))
			}
			next.ServeHTTP(w, r)
			return
		}
		resp, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
		if !ok || resp == nil || resp.User == nil {
			s.log.Debug("unable to authenticate the request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			s.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r.WithContext(auth.WithUser(ctx, resp.User)))
	})
}
