package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authn"
)

// Cache lifetimes of delegated decisions, the kubelet's defaults
// (--authentication-token-webhook-cache-ttl,
// --authorization-webhook-cache-authorized-ttl / -unauthorized-ttl).
const (
	TokenCacheTTL      = 2 * time.Minute
	AllowedCacheTTL    = 5 * time.Minute
	DisallowedCacheTTL = 30 * time.Second
)

// DelegatedAuthenticator is how a kubelet authenticates its callers:
// client certificates signed by clientCA (the API server presents its
// kubelet-client certificate), or bearer tokens the API server vouches
// for through TokenReview. Answers are cached for TokenCacheTTL.
func DelegatedAuthenticator(client kubernetes.Interface, clientCA *x509.CertPool) auth.Authenticator {
	tr := &tokenReviewer{client: client, cache: newTTLCache[*auth.Response]()}
	var chain []auth.Authenticator
	if clientCA != nil {
		chain = append(chain, &authn.X509{Roots: clientCA})
	}
	chain = append(chain, authn.Bearer(tr))
	return authn.Union(chain...)
}

type tokenReviewer struct {
	client kubernetes.Interface
	cache  *ttlCache[*auth.Response]
}

func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*auth.Response, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if resp, ok := t.cache.get(key); ok {
		return resp, resp != nil, nil
	}
	res, err := t.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("token review: %w", err)
	}
	if !res.Status.Authenticated {
		t.cache.put(key, nil, DisallowedCacheTTL)
		if res.Status.Error != "" {
			return nil, false, fmt.Errorf("token review: %s", res.Status.Error)
		}
		return nil, false, nil
	}
	u := res.Status.User
	du := &auth.DefaultUser{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		du.Extra = map[string][]string{}
		for k, v := range u.Extra {
			du.Extra[k] = v
		}
	}
	resp := &auth.Response{User: du, Audiences: res.Status.Audiences}
	t.cache.put(key, resp, TokenCacheTTL)
	return resp, true, nil
}

// DelegatedAuthorizer asks the API server through SubjectAccessReview
// (authorization.k8s.io/v1) whether a caller may use the kubelet's
// endpoint; allowed answers are cached for AllowedCacheTTL, others for
// DisallowedCacheTTL.
func DelegatedAuthorizer(client kubernetes.Interface) auth.Authorizer {
	type answer struct {
		d      auth.Decision
		reason string
	}
	cache := newTTLCache[answer]()
	return auth.AuthorizerFunc(func(ctx context.Context, a auth.Attributes) (auth.Decision, string, error) {
		key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", a.User.GetName(), a.User.GetUID(),
			strings.Join(a.User.GetGroups(), ","), a.Verb, a.Resource, a.Subresource, a.Name)
		if v, ok := cache.get(key); ok {
			return v.d, v.reason, nil
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: a.User.GetName(), UID: a.User.GetUID(), Groups: a.User.GetGroups(),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.Verb, Version: a.APIVersion,
				Resource: a.Resource, Subresource: a.Subresource, Name: a.Name},
		}}
		if extra := a.User.GetExtra(); len(extra) > 0 {
			sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
			for k, v := range extra {
				sar.Spec.Extra[k] = v
			}
		}
		res, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return auth.DecisionNoOpinion, "", fmt.Errorf("subject access review: %w", err)
		}
		v := answer{d: auth.DecisionNoOpinion, reason: res.Status.Reason}
		ttl := DisallowedCacheTTL
		switch {
		case res.Status.Allowed:
			v.d, ttl = auth.DecisionAllow, AllowedCacheTTL
		case res.Status.Denied:
			v.d = auth.DecisionDeny
		}
		cache.put(key, v, ttl)
		return v.d, v.reason, nil
	})
}

// ttlCache is a small map with per-entry expiry.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
	now     func() time.Time
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[V any]() *ttlCache[V] {
	return &ttlCache[V]{entries: map[string]ttlEntry[V]{}, now: time.Now}
}

func (c *ttlCache[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !c.now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(k string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) > 4096 {
		for key, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, key)
			}
		}
	}
	c.entries[k] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}
