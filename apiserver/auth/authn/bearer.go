package authn

import (
	"errors"
	"net/http"
	"strings"

	"github.com/podkit/podkit/apiserver/auth"
)

// ErrInvalidBearer: an Authorization header of the Bearer scheme that
// carries no usable token.
var ErrInvalidBearer = errors.New("invalid bearer token")

// BearerToken extracts the token of an "Authorization: Bearer <token>"
// header. ok is false when there is no Bearer header; err is set when
// there is one but it is empty or holds spaces.
func BearerToken(h http.Header) (token string, ok bool, err error) {
	v := strings.TrimSpace(h.Get("Authorization"))
	scheme, rest, found := strings.Cut(v, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false, nil
	}
	token = strings.TrimSpace(rest)
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", true, ErrInvalidBearer
	}
	return token, true, nil
}

// Bearer authenticates requests by their bearer token with t.
func Bearer(t auth.TokenAuthenticator) auth.Authenticator {
	return auth.AuthenticatorFunc(func(r *http.Request) (*auth.Response, bool, error) {
		token, ok, err := BearerToken(r.Header)
		if !ok || err != nil {
			return nil, false, err
		}
		return t.AuthenticateToken(r.Context(), token)
	})
}
