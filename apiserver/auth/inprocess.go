package auth

import "context"

// Components that run in the API server's process (podkit.Cluster's
// scheduler, controllers and kubelets) reach its handler through
// internal/inproc, without TCP and without certificates. Their identity
// travels in the request's context instead: the in-process transport calls
// WithInProcessUser, and the authentication filter accepts the user it
// finds there before asking any Authenticator.
//
// This is safe because a context value can only be set by Go code in the
// same process: nothing a network client sends (headers, certificates,
// body) becomes a context value, and the key's type is unexported, so no
// other package can forge or read it except through these functions. The
// one way to misuse it is to put an in-process user into the BaseContext of
// an http.Server serving the handler, which no podkit code does.

type inProcessKey struct{}

// WithInProcessUser marks ctx as a request from a trusted in-process
// component acting as u.
func WithInProcessUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, inProcessKey{}, u)
}

// InProcessUserFrom returns the trusted in-process identity, nil if the
// request did not come through an in-process transport.
func InProcessUserFrom(ctx context.Context) User {
	u, _ := ctx.Value(inProcessKey{}).(User)
	return u
}
