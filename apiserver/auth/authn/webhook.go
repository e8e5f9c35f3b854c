package authn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/apiserver/auth"
)

// WebhookToken is the webhook token authenticator
// (--authentication-token-webhook-config-file): it sends each bearer token
// to a remote service as an authentication.k8s.io/v1 TokenReview and
// believes its answer, caching it for CacheTTL.
type WebhookToken struct {
	url    string
	client *http.Client
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]webhookEntry
}

type webhookEntry struct {
	resp    *auth.Response
	ok      bool
	expires time.Time
}

var _ auth.TokenAuthenticator = (*WebhookToken)(nil)

// DefaultWebhookCacheTTL is --authentication-token-webhook-cache-ttl's
// default.
const DefaultWebhookCacheTTL = 2 * time.Minute

// NewWebhookTokenFromFile reads a kubeconfig naming the webhook (its
// cluster's server is the URL, its user the credential podkit presents).
func NewWebhookTokenFromFile(path string, ttl time.Duration) (*WebhookToken, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("token webhook config %s: %w", path, err)
	}
	return NewWebhookToken(cfg, ttl)
}

// NewWebhookToken calls the webhook at cfg.Host with cfg's TLS settings
// and credentials; ttl 0 means DefaultWebhookCacheTTL, negative no cache.
func NewWebhookToken(cfg *rest.Config, ttl time.Duration) (*WebhookToken, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("token webhook: %w", err)
	}
	if hc.Timeout == 0 {
		hc.Timeout = 30 * time.Second
	}
	if ttl == 0 {
		ttl = DefaultWebhookCacheTTL
	}
	return &WebhookToken{url: cfg.Host, client: hc, ttl: ttl, now: time.Now, cache: map[string]webhookEntry{}}, nil
}

// AuthenticateToken implements auth.TokenAuthenticator.
func (w *WebhookToken) AuthenticateToken(ctx context.Context, token string) (*auth.Response, bool, error) {
	now := w.now()
	if w.ttl > 0 {
		w.mu.Lock()
		e, hit := w.cache[token]
		w.mu.Unlock()
		if hit && now.Before(e.expires) {
			return e.resp, e.ok, nil
		}
	}
	resp, ok, err := w.review(ctx, token)
	if err != nil {
		return nil, false, err
	}
	if w.ttl > 0 {
		w.mu.Lock()
		for k, e := range w.cache {
			if !now.Before(e.expires) {
				delete(w.cache, k)
			}
		}
		w.cache[token] = webhookEntry{resp: resp, ok: ok, expires: now.Add(w.ttl)}
		w.mu.Unlock()
	}
	return resp, ok, nil
}

func (w *WebhookToken) review(ctx context.Context, token string) (*auth.Response, bool, error) {
	body, err := json.Marshal(&authenticationv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec:     authenticationv1.TokenReviewSpec{Token: token},
	})
	if err != nil {
		return nil, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("token webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := w.client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("token webhook: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, false, fmt.Errorf("token webhook: %w", err)
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated {
		return nil, false, fmt.Errorf("token webhook: %s: %s", res.Status, bytes.TrimSpace(data))
	}
	var tr authenticationv1.TokenReview
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, false, fmt.Errorf("token webhook: decoding TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		if tr.Status.Error != "" {
			return nil, false, fmt.Errorf("token webhook: %s", tr.Status.Error)
		}
		return nil, false, nil
	}
	u := &auth.DefaultUser{Name: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups}
	if len(tr.Status.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range tr.Status.User.Extra {
			u.Extra[k] = v
		}
	}
	return &auth.Response{User: u, Audiences: tr.Status.Audiences}, true, nil
}
