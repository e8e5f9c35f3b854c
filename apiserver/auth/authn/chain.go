package authn

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/podkit/podkit/apiserver/auth"
)

// Union returns an Authenticator that asks each of as in order: the first
// success wins; when none succeeds the errors of all are joined.
func Union(as ...auth.Authenticator) auth.Authenticator {
	return auth.AuthenticatorFunc(func(r *http.Request) (*auth.Response, bool, error) {
		var errs []error
		for _, a := range as {
			resp, ok, err := a.AuthenticateRequest(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return resp, true, nil
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// TokenUnion is Union for token authenticators.
func TokenUnion(ts ...auth.TokenAuthenticator) auth.TokenAuthenticator {
	return auth.TokenAuthenticatorFunc(func(ctx context.Context, token string) (*auth.Response, bool, error) {
		var errs []error
		for _, t := range ts {
			resp, ok, err := t.AuthenticateToken(ctx, token)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return resp, true, nil
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// WithAuthenticatedGroup adds system:authenticated to every identity a
// returns, except the anonymous user's.
func WithAuthenticatedGroup(a auth.Authenticator) auth.Authenticator {
	return auth.AuthenticatorFunc(func(r *http.Request) (*auth.Response, bool, error) {
		resp, ok, err := a.AuthenticateRequest(r)
		if !ok || err != nil {
			return resp, ok, err
		}
		return addAuthenticated(resp), true, nil
	})
}

// TokenWithAuthenticatedGroup is WithAuthenticatedGroup for tokens
// (TokenReview answers include the group, as Kubernetes').
func TokenWithAuthenticatedGroup(t auth.TokenAuthenticator) auth.TokenAuthenticator {
	return auth.TokenAuthenticatorFunc(func(ctx context.Context, token string) (*auth.Response, bool, error) {
		resp, ok, err := t.AuthenticateToken(ctx, token)
		if !ok || err != nil {
			return resp, ok, err
		}
		return addAuthenticated(resp), true, nil
	})
}

func addAuthenticated(resp *auth.Response) *auth.Response {
	u := resp.User
	if u.GetName() == auth.UserAnonymous || slices.Contains(u.GetGroups(), auth.GroupAuthenticated) {
		return resp
	}
	out := *resp
	out.User = &auth.DefaultUser{Name: u.GetName(), UID: u.GetUID(),
		Groups: append(slices.Clone(u.GetGroups()), auth.GroupAuthenticated), Extra: u.GetExtra()}
	return &out
}

// Anonymous authenticates every request as system:anonymous in
// system:unauthenticated; put it last in a chain (--anonymous-auth).
func Anonymous() auth.Authenticator {
	return auth.AuthenticatorFunc(func(*http.Request) (*auth.Response, bool, error) {
		return &auth.Response{User: &auth.DefaultUser{Name: auth.UserAnonymous, Groups: []string{auth.GroupUnauthenticated}}}, true, nil
	})
}
