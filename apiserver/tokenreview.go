package apiserver

import (
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/auth"
)

// createAuthenticationReview serves the create-only resources of
// authentication.k8s.io/v1: tokenreviews and selfsubjectreviews. Neither
// is stored.
func (s *Server) createAuthenticationReview(w http.ResponseWriter, r *http.Request, res *Resource) error {
	t, obj, err := s.decodeRequest(w, r, res.GroupVersionKind(), res.New())
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *authenticationv1.TokenReview:
		if err := s.reviewToken(r, o); err != nil {
			return err
		}
	case *authenticationv1.SelfSubjectReview:
		if u := auth.UserFrom(r.Context()); u != nil {
			o.Status.UserInfo = userInfo(u)
		}
	default:
		return apierrors.NewBadRequest("unexpected object in an authentication review")
	}
	s.writeObject(w, r, http.StatusCreated, t, obj, gvAuthentication)
	return nil
}

// reviewToken answers a TokenReview the way kube-apiserver does: the token
// goes through the bearer-token authenticators (Config.TokenReviewer); a
// token that does not authenticate is a successful review with
// authenticated=false and the reason in status.error.
func (s *Server) reviewToken(r *http.Request, tr *authenticationv1.TokenReview) error {
	if tr.Spec.Token == "" {
		return apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	tr.Status = authenticationv1.TokenReviewStatus{}
	if s.cfg.TokenReviewer == nil {
		tr.Status.Error = "token authentication is not enabled on this server"
		return nil
	}
	resp, ok, err := s.cfg.TokenReviewer.AuthenticateToken(r.Context(), tr.Spec.Token)
	tr.Spec.Token = "" // never echoed back
	if err != nil {
		tr.Status.Error = err.Error()
		return nil
	}
	if !ok || resp == nil || resp.User == nil {
		return nil
	}
	// Audiences: the token's, or the API's when it names none (static
	// tokens, certificates); a review asking for others must share one.
	have := resp.Audiences
	if len(have) == 0 && s.cfg.ServiceAccountIssuer != nil {
		have = s.cfg.ServiceAccountIssuer.Audiences()
	}
	if want := tr.Spec.Audiences; len(want) > 0 {
		var both []string
		for _, a := range want {
			if slices.Contains(have, a) {
				both = append(both, a)
			}
		}
		if len(both) == 0 && len(have) > 0 {
			tr.Status.Error = "token audiences are invalid for the requested audiences"
			return nil
		}
		if len(have) > 0 {
			have = both
		} else {
			have = want
		}
	}
	tr.Status.Authenticated = true
	tr.Status.User = userInfo(resp.User)
	tr.Status.Audiences = have
	return nil
}

func userInfo(u auth.User) authenticationv1.UserInfo {
	ui := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: slices.Clone(u.GetGroups())}
	if extra := u.GetExtra(); len(extra) > 0 {
		ui.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			ui.Extra[k] = slices.Clone(v)
		}
	}
	return ui
}

// New functions of the authentication.k8s.io/v1 resources (DefaultResources).
func newSelfSubjectReview() runtime.Object { return &authenticationv1.SelfSubjectReview{} }
func newTokenReview() runtime.Object       { return &authenticationv1.TokenReview{} }
