package volume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TokenSource issues the service account token of a projected
// serviceAccountToken source for a pod. Setup asks on every sync, so an
// implementation should cache tokens and renew them before they expire (see
// TokenRequester).
type TokenSource interface {
	Token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (token string, expiry time.Time, err error)
}

// TokenSourceFunc adapts a function to TokenSource.
type TokenSourceFunc func(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, time.Time, error)

// Token calls f.
func (f TokenSourceFunc) Token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, time.Time, error) {
	return f(ctx, pod, p)
}

// Forgetter is an optional interface of a TokenSource: Teardown calls
// Forget so that cached tokens of a removed pod are dropped.
type Forgetter interface {
	Forget(podUID types.UID)
}

const (
	// defaultTokenExpiration is the API's default expirationSeconds.
	defaultTokenExpiration = int64(3600)
	// maxTokenAge forces a renewal of tokens older than a day, whatever
	// their lifetime, as the kubelet's token manager does.
	maxTokenAge = 24 * time.Hour
)

// TokenRequester is a TokenSource that asks the API server
// (serviceaccounts/<name>/token, the TokenRequest API) for tokens bound to
// the pod, and caches each until 80% of its lifetime has passed (or a day),
// like the kubelet's token manager. A failed renewal falls back to the
// cached token while it is still valid.
type TokenRequester struct {
	client kubernetes.Interface
	now    func() time.Time

	mu    sync.Mutex
	cache map[tokenKey]tokenEntry
}

type tokenKey struct {
	uid                     types.UID
	namespace, sa, audience string
	expiration              int64
}

type tokenEntry struct {
	token          string
	issued, expiry time.Time
}

var (
	_ TokenSource = (*TokenRequester)(nil)
	_ Forgetter   = (*TokenRequester)(nil)
)

// NewTokenRequester returns a TokenRequester; clock defaults to time.Now.
func NewTokenRequester(client kubernetes.Interface, clock func() time.Time) *TokenRequester {
	if clock == nil {
		clock = time.Now
	}
	return &TokenRequester{client: client, now: clock, cache: map[tokenKey]tokenEntry{}}
}

// Token returns a cached token or requests a new one.
func (r *TokenRequester) Token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, time.Time, error) {
	if r.client == nil {
		return "", time.Time{}, fmt.Errorf("failed to fetch token: %w", ErrNoClient)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	exp := defaultTokenExpiration
	if p.ExpirationSeconds != nil {
		exp = *p.ExpirationSeconds
	}
	key := tokenKey{uid: pod.UID, namespace: pod.Namespace, sa: sa, audience: p.Audience, expiration: exp}
	now := r.now()

	r.mu.Lock()
	cached, ok := r.cache[key]
	r.mu.Unlock()
	if ok && !cached.needsRenewal(now) {
		return cached.token, cached.expiry, nil
	}

	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	res, err := r.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err == nil && (res == nil || res.Status.Token == "") {
		err = errors.New("the API server returned an empty token")
	}
	if err != nil {
		if ok && now.Before(cached.expiry) {
			return cached.token, cached.expiry, nil
		}
		return "", time.Time{}, fmt.Errorf("failed to fetch token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	e := tokenEntry{token: res.Status.Token, expiry: res.Status.ExpirationTimestamp.Time}
	ttl := exp
	if res.Spec.ExpirationSeconds != nil {
		ttl = *res.Spec.ExpirationSeconds // the server may shorten it
	}
	e.issued = e.expiry.Add(-time.Duration(ttl) * time.Second)
	if e.expiry.IsZero() {
		e.issued, e.expiry = now, now.Add(time.Duration(ttl)*time.Second)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for k, old := range r.cache { // drop expired tokens of any pod
		if !now.Before(old.expiry) {
			delete(r.cache, k)
		}
	}
	r.cache[key] = e
	return e.token, e.expiry, nil
}

// needsRenewal: past 80% of the lifetime, or older than maxTokenAge.
func (e tokenEntry) needsRenewal(now time.Time) bool {
	life := e.expiry.Sub(e.issued)
	return !now.Before(e.expiry.Add(-life/5)) || !now.Before(e.issued.Add(maxTokenAge))
}

// Forget drops the cached tokens of a pod.
func (r *TokenRequester) Forget(podUID types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.cache {
		if k.uid == podUID {
			delete(r.cache, k)
		}
	}
}
