package auth

import "context"

// TokenAuthenticator authenticates a bearer token: the part of the chain
// TokenReview (authentication.k8s.io/v1) exposes to kubelets and webhooks.
// ok=false with a nil error means "not a token of mine".
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (resp *Response, ok bool, err error)
}

// TokenAuthenticatorFunc adapts a function to TokenAuthenticator.
type TokenAuthenticatorFunc func(ctx context.Context, token string) (*Response, bool, error)

// AuthenticateToken calls f.
func (f TokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	return f(ctx, token)
}
