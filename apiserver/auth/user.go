// Package auth holds step 2 of the birth sequence: who is calling
// (authentication) and whether they may (authorization). This file defines
// the identity every later stage sees.
package auth

import "context"

// User is an authenticated identity, shaped like Kubernetes' user.Info.
type User interface {
	GetName() string
	GetUID() string
	GetGroups() []string
	GetExtra() map[string][]string
}

// DefaultUser is a plain User.
type DefaultUser struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

func (u *DefaultUser) GetName() string               { return u.Name }
func (u *DefaultUser) GetUID() string                { return u.UID }
func (u *DefaultUser) GetGroups() []string           { return u.Groups }
func (u *DefaultUser) GetExtra() map[string][]string { return u.Extra }

var _ User = (*DefaultUser)(nil)

// Well-known groups and users, as Kubernetes names them.
const (
	GroupMasters         = "system:masters"
	GroupAuthenticated   = "system:authenticated"
	GroupUnauthenticated = "system:unauthenticated"
	UserAnonymous        = "system:anonymous"
)

type userKey struct{}

// WithUser returns a context carrying the request's user.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the request's user, nil if none.
func UserFrom(ctx context.Context) User {
	u, _ := ctx.Value(userKey{}).(User)
	return u
}
