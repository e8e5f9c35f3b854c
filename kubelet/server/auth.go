package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/podkit/podkit/apiserver/auth"
)

// withAuth authenticates and authorizes every request when the server has
// an Authenticator, as the kubelet's server does: no identity → 401, an
// identity the Authorizer does not allow on the node's subresource → 403.
// The Authorization header is removed before the handler runs.
func (s *Server) withAuth(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if s.cfg.Authenticator == nil {
		return r, true
	}
	resp, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	if !ok || resp == nil || resp.User == nil {
		s.log.Debug("kubelet server: unauthenticated request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		writeError(w, http.StatusUnauthorized, "Unauthorized")
		return nil, false
	}
	r.Header.Del("Authorization")
	r = r.WithContext(auth.WithUser(r.Context(), resp.User))
	if s.cfg.Authorizer == nil {
		return r, true
	}
	attrs := RequestAttributes(resp.User, r, s.cfg.NodeName)
	d, reason, err := s.cfg.Authorizer.Authorize(r.Context(), attrs)
	if err != nil {
		s.log.Warn("kubelet server: authorization failed", "user", resp.User.GetName(), "path", r.URL.Path, "err", err)
	}
	if d != auth.DecisionAllow {
		msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource=%s)", resp.User.GetName(), attrs.Verb, attrs.Resource, attrs.Subresource)
		if reason != "" {
			msg += ": " + reason
		}
		writeError(w, http.StatusForbidden, msg)
		return nil, false
	}
	return r, true
}

// RequestAttributes maps a kubelet request to what it is authorized as,
// like the kubelet: the node object's subresource named after the path
// (stats, metrics, log, spec, checkpoint; everything else, container logs
// included, is proxy) and the verb from the method.
func RequestAttributes(u auth.User, r *http.Request, node string) auth.Attributes {
	verb := "get"
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	sub := "proxy"
	for _, p := range []struct{ prefix, sub string }{
		{"/stats", "stats"}, {"/metrics", "metrics"}, {"/logs/", "log"}, {"/spec", "spec"}, {"/checkpoint", "checkpoint"},
	} {
		if r.URL.Path == strings.TrimSuffix(p.prefix, "/") || strings.HasPrefix(r.URL.Path, p.prefix) {
			sub = p.sub
			break
		}
	}
	return auth.Attributes{User: u, Verb: verb, ResourceRequest: true, APIVersion: "v1",
		Resource: "nodes", Subresource: sub, Name: node}
}
