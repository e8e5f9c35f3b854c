package auth

import (
	"context"
	"net/http"
)

// Authenticator answers "who is calling" for one request: the first stage
// after the connection in the seeds' "Authentication → Authorization →
// Admission". ok=false with a nil error means "no opinion" (the next
// authenticator in a chain may try); a non-nil error means the request
// carried a credential of this kind that is invalid.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (resp *Response, ok bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*Response, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	return f(r)
}

// Response is a successful authentication.
type Response struct {
	// User is the authenticated identity.
	User User
	// Audiences the credential was valid for (service-account tokens).
	Audiences []string
}

// Decision is an authorizer's answer.
type Decision int

const (
	// DecisionNoOpinion lets the next authorizer decide; if none does the
	// request is forbidden.
	DecisionNoOpinion Decision = iota
	// DecisionAllow permits the request.
	DecisionAllow
	// DecisionDeny forbids it without asking further authorizers.
	DecisionDeny
)

// Attributes describe a request to authorize, as Kubernetes'
// authorizer.Attributes do.
type Attributes struct {
	User User
	// Verb is the API verb for resource requests (get, list, watch,
	// create, update, patch, delete, deletecollection, impersonate, …) or
	// the lower-case HTTP method for non-resource requests.
	Verb string
	// ResourceRequest is true for /api and /apis resource paths.
	ResourceRequest bool
	Namespace       string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Name            string
	// Path is the URL path of non-resource requests.
	Path string
}

// Authorizer answers "may they": the second stage of the seeds' chain.
// reason explains a deny or no-opinion for the 403 message.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}
