package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/apiserver/auth"
)

// Webhook defaults, as kube-apiserver's --authorization-webhook-* flags.
const (
	DefaultWebhookAllowTTL = 5 * time.Minute
	DefaultWebhookDenyTTL  = 30 * time.Second
	DefaultWebhookTimeout  = 30 * time.Second
)

// WebhookConfig configures a Webhook authorizer.
type WebhookConfig struct {
	// URL receives POSTed SubjectAccessReviews (authorization.k8s.io/v1).
	URL string
	// Client sends them; nil means http.DefaultClient with Timeout.
	Client *http.Client
	// AllowTTL and DenyTTL are how long allowed and not-allowed answers
	// are cached; zero means the defaults, negative disables caching.
	AllowTTL, DenyTTL time.Duration
	// Timeout bounds one call; zero means DefaultWebhookTimeout.
	Timeout time.Duration
	// Clock defaults to time.Now.
	Clock func() time.Time
}

// Webhook asks a remote service whether a request is allowed, sending it
// a SubjectAccessReview as kube-apiserver's webhook authorization mode
// does. A reply with status.denied is a Deny; allowed is Allow; anything
// else, and a failed call, is no opinion (the failure is returned as the
// error, and not cached).
type Webhook struct {
	cfg   WebhookConfig
	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	decision auth.Decision
	reason   string
	expires  time.Time
}

var _ auth.Authorizer = (*Webhook)(nil)

// NewWebhook builds a webhook authorizer.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if cfg.URL == "" {
		return nil, errors.New("authz: webhook URL is required")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultWebhookTimeout
	}
	if cfg.AllowTTL == 0 {
		cfg.AllowTTL = DefaultWebhookAllowTTL
	}
	if cfg.DenyTTL == 0 {
		cfg.DenyTTL = DefaultWebhookDenyTTL
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Webhook{cfg: cfg, cache: map[string]cached{}}, nil
}

// NewWebhookFromKubeconfig reads the kubeconfig file named by
// --authorization-webhook-config-file: its current cluster is the
// service (server URL, CA) and its user the credentials podkit presents.
func NewWebhookFromKubeconfig(path string, cfg WebhookConfig) (*Webhook, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("authz: webhook config %s: %w", path, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultWebhookTimeout
	}
	rc.Timeout = cfg.Timeout
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("authz: webhook config %s: %w", path, err)
	}
	cfg.URL, cfg.Client = rc.Host, client
	return NewWebhook(cfg)
}

// Review builds the SubjectAccessReview for a, as sent to the webhook.
func Review(a auth.Attributes) *authorizationv1.SubjectAccessReview {
	r := &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SubjectAccessReview"},
	}
	if a.User != nil {
		r.Spec.User, r.Spec.UID, r.Spec.Groups = a.User.GetName(), a.User.GetUID(), a.User.GetGroups()
		if extra := a.User.GetExtra(); len(extra) > 0 {
			r.Spec.Extra = map[string]authorizationv1.ExtraValue{}
			for k, v := range extra {
				r.Spec.Extra[k] = v
			}
		}
	}
	if a.ResourceRequest {
		r.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.Namespace, Verb: a.Verb, Group: a.APIGroup, Version: a.APIVersion,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		}
	} else {
		r.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	return r
}

// Authorize asks the webhook (or its cache).
func (w *Webhook) Authorize(ctx context.Context, a auth.Attributes) (auth.Decision, string, error) {
	review := Review(a)
	body, err := json.Marshal(review)
	if err != nil {
		return auth.DecisionNoOpinion, "", fmt.Errorf("authz: encoding SubjectAccessReview: %w", err)
	}
	key := string(body)
	now := w.cfg.Clock()
	w.mu.Lock()
	if c, ok := w.cache[key]; ok && now.Before(c.expires) {
		w.mu.Unlock()
		return c.decision, c.reason, nil
	}
	w.mu.Unlock()
	status, err := w.call(ctx, body)
	if err != nil {
		return auth.DecisionNoOpinion, "", err
	}
	d, ttl := auth.DecisionNoOpinion, w.cfg.DenyTTL
	switch {
	case status.Allowed:
		d, ttl = auth.DecisionAllow, w.cfg.AllowTTL
	case status.Denied:
		d = auth.DecisionDeny
	}
	if ttl > 0 {
		w.mu.Lock()
		if len(w.cache) > 10000 {
			w.cache = map[string]cached{}
		}
		w.cache[key] = cached{decision: d, reason: status.Reason, expires: now.Add(ttl)}
		w.mu.Unlock()
	}
	return d, status.Reason, nil
}

func (w *Webhook) call(ctx context.Context, body []byte) (*authorizationv1.SubjectAccessReviewStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("authz: webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("authz: calling authorization webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("authz: reading authorization webhook reply: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("authz: authorization webhook answered %s", resp.Status)
	}
	var out authorizationv1.SubjectAccessReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("authz: decoding authorization webhook reply: %w", err)
	}
	return &out.Status, nil
}
