package authz

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/podkit/podkit/apiserver/auth"
)

// Runner is implemented by authorizers that keep a watched view of the
// store (RBAC, Node): Run keeps it current until ctx is done. Union runs
// the Runners it holds.
type Runner interface {
	Run(ctx context.Context)
}

// RulesResolver is implemented by authorizers that can list what a user
// may do in a namespace, for SelfSubjectRulesReview (`kubectl auth can-i
// --list`).
type RulesResolver interface {
	// RulesFor returns the rules that apply to u in namespace (cluster-wide
	// rules included). incomplete is true when some rules could not be
	// resolved (a missing role, say).
	RulesFor(ctx context.Context, u auth.User, namespace string) (resource []ResourceRule, nonResource []NonResourceRule, incomplete bool, err error)
}

// ResourceRule is one grant on resources, as authorization.k8s.io/v1
// reports it.
type ResourceRule struct {
	Verbs, APIGroups, Resources, ResourceNames []string
}

// NonResourceRule is one grant on non-resource URLs.
type NonResourceRule struct {
	Verbs, NonResourceURLs []string
}

// Chain is a union of authorizers: the first to allow or deny decides; if
// none does the answer is no opinion, which the server turns into 403.
type Chain struct {
	authorizers []auth.Authorizer
}

var (
	_ auth.Authorizer = (*Chain)(nil)
	_ Runner          = (*Chain)(nil)
	_ RulesResolver   = (*Chain)(nil)
)

// Union returns the chain of authorizers, asked in order. Nil entries are
// skipped.
func Union(authorizers ...auth.Authorizer) *Chain {
	c := &Chain{}
	for _, a := range authorizers {
		if a != nil {
			c.authorizers = append(c.authorizers, a)
		}
	}
	return c
}

// Authorizers returns the chain's members in order.
func (c *Chain) Authorizers() []auth.Authorizer {
	return append([]auth.Authorizer(nil), c.authorizers...)
}

// Authorize asks each authorizer in turn. Errors of earlier authorizers do
// not stop the chain (a later one may still allow); they are returned with
// the no-opinion answer when nobody decides. Reasons of authorizers that
// had no opinion are joined for the 403 message.
func (c *Chain) Authorize(ctx context.Context, a auth.Attributes) (auth.Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range c.authorizers {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		switch d {
		case auth.DecisionAllow, auth.DecisionDeny:
			return d, reason, nil
		}
	}
	return auth.DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// Run runs every member that is a Runner until ctx is done.
func (c *Chain) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, z := range c.authorizers {
		if r, ok := z.(Runner); ok {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.Run(ctx)
			}()
		}
	}
	wg.Wait()
}

// RulesFor merges the rules of every member that resolves rules.
func (c *Chain) RulesFor(ctx context.Context, u auth.User, namespace string) ([]ResourceRule, []NonResourceRule, bool, error) {
	var res []ResourceRule
	var non []NonResourceRule
	incomplete := false
	var errs []error
	for _, z := range c.authorizers {
		r, ok := z.(RulesResolver)
		if !ok {
			incomplete = true
			continue
		}
		rr, nr, inc, err := r.RulesFor(ctx, u, namespace)
		if err != nil {
			errs = append(errs, err)
		}
		res, non, incomplete = append(res, rr...), append(non, nr...), incomplete || inc
	}
	return res, non, incomplete, errors.Join(errs...)
}

type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, auth.Attributes) (auth.Decision, string, error) {
	return auth.DecisionAllow, "", nil
}

// AlwaysAllow allows every request (--authorization-mode=AlwaysAllow), for
// embedding and tests.
func AlwaysAllow() auth.Authorizer { return alwaysAllow{} }

type alwaysDeny struct{}

func (alwaysDeny) Authorize(context.Context, auth.Attributes) (auth.Decision, string, error) {
	return auth.DecisionNoOpinion, "Everything is forbidden.", nil
}

// AlwaysDeny answers no opinion with Kubernetes' reason for every request
// (--authorization-mode=AlwaysDeny), so the request is forbidden unless an
// earlier authorizer allowed it.
func AlwaysDeny() auth.Authorizer { return alwaysDeny{} }

type privileged struct{}

// Privileged allows every request of a member of system:masters without
// asking further, as kube-apiserver's privileged-group authorizer does
// ahead of the configured modes.
func Privileged() auth.Authorizer { return privileged{} }

func isMaster(u auth.User) bool {
	if u == nil {
		return false
	}
	for _, g := range u.GetGroups() {
		if g == auth.GroupMasters {
			return true
		}
	}
	return false
}

func (privileged) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if isMaster(a.User) {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "", nil
}

// RulesFor grants everything to system:masters and nothing else.
func (privileged) RulesFor(_ context.Context, u auth.User, _ string) ([]ResourceRule, []NonResourceRule, bool, error) {
	if !isMaster(u) {
		return nil, nil, false, nil
	}
	return allRules()
}

func allRules() ([]ResourceRule, []NonResourceRule, bool, error) {
	return []ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
}

// RulesFor grants everything.
func (alwaysAllow) RulesFor(context.Context, auth.User, string) ([]ResourceRule, []NonResourceRule, bool, error) {
	return allRules()
}

// RulesFor grants nothing.
func (alwaysDeny) RulesFor(context.Context, auth.User, string) ([]ResourceRule, []NonResourceRule, bool, error) {
	return nil, nil, false, nil
}
