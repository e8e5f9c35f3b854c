package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Dynamic admission: MutatingAdmissionWebhook and ValidatingAdmissionWebhook,
// the last mutating and validating steps of step 3 of the birth sequence.
// The webhook configurations are ordinary stored objects
// (admissionregistration.k8s.io/v1), kept in memory from a watch of the
// store (webhook_cache.go) and run in name order; a configuration applies
// to the requests that arrive once the watch has delivered it. Each matching webhook receives an AdmissionReview v1 over
// HTTPS (a URL, or a Service resolved to its cluster IP with the TLS name
// <service>.<namespace>.svc, verified with the configuration's caBundle);
// a mutating webhook's JSONPatch is applied to the object; a denial
// rejects the request with the webhook's status; a failed call rejects it
// with 500 under failurePolicy Fail and is skipped under Ignore. Mutating
// webhooks with reinvocationPolicy IfNeeded run once more when a later
// webhook changed the object. The webhook configurations themselves are
// never sent to webhooks, so a broken webhook can always be removed.

// ServiceResolver turns a webhook's service reference into the URL to call
// and the TLS server name to verify.
type ServiceResolver func(ctx context.Context, namespace, name string, port int32) (host string, serverName string, err error)

// WebhookConfig configures the webhook admission plugins.
type WebhookConfig struct {
	// Store lists and watches webhook configurations and reads
	// namespaces (for namespaceSelector) and services. Required.
	Store WebhookStore
	// ResolveService defaults to the Service's cluster IP in Store.
	ResolveService ServiceResolver
	// Transport wraps the TLS transport of every call (tests); nil uses
	// an http.Transport per CA bundle.
	Transport func(base *http.Transport) http.RoundTripper
	// Defaulter re-applies defaults to an object a webhook patched, as
	// kube-apiserver's decoding of the patched object does (the chain's
	// Defaulter fits); nil leaves patched objects as they are.
	Defaulter Admitter
	// SyncTimeout bounds how long a write waits for Run's first read of
	// the configurations before it is rejected; default 10 seconds (what
	// kube-apiserver waits for its webhook informers).
	SyncTimeout time.Duration
	// RetryInterval is the pause after a failed list or watch of the
	// configurations; default one second.
	RetryInterval time.Duration
	Logger        *slog.Logger
}

// Webhooks holds what the two webhook plugins share: the configuration,
// the cached webhook configurations (kept current by Run) and HTTP
// clients per CA bundle.
type Webhooks struct {
	cfg        WebhookConfig
	mutating   *configCache
	validating *configCache
	mu         sync.Mutex
	clients    map[string]*http.Client
}

// NewWebhooks builds the webhook dispatcher; Mutating and Validating
// return its two plugins. Run must be running for them to admit writes.
func NewWebhooks(cfg WebhookConfig) (*Webhooks, error) {
	if cfg.Store == nil {
		return nil, errors.New("admission: webhooks need a store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = time.Second
	}
	d := &Webhooks{cfg: cfg, clients: map[string]*http.Client{},
		mutating:   newConfigCache(mutatingConfigsGR, flattenMutating),
		validating: newConfigCache(validatingConfigsGR, flattenValidating)}
	if d.cfg.ResolveService == nil {
		d.cfg.ResolveService = d.serviceClusterIP
	}
	return d, nil
}

// Mutating returns the MutatingAdmissionWebhook plugin.
func (d *Webhooks) Mutating() *MutatingWebhook { return &MutatingWebhook{d: d} }

// Validating returns the ValidatingAdmissionWebhook plugin.
func (d *Webhooks) Validating() *ValidatingWebhook { return &ValidatingWebhook{d: d} }

// MutatingWebhook is the MutatingAdmissionWebhook plugin.
type MutatingWebhook struct{ d *Webhooks }

// ValidatingWebhook is the ValidatingAdmissionWebhook plugin.
type ValidatingWebhook struct{ d *Webhooks }

var (
	_ Admitter  = (*MutatingWebhook)(nil)
	_ Validator = (*ValidatingWebhook)(nil)
)

// Name is the plugin's name.
func (*MutatingWebhook) Name() string { return "MutatingAdmissionWebhook" }

// Name is the plugin's name.
func (*ValidatingWebhook) Name() string { return "ValidatingAdmissionWebhook" }

var (
	mutatingConfigsGR   = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingwebhookconfigurations"}
	validatingConfigsGR = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingwebhookconfigurations"}
)

func exempt(a *Attributes) bool {
	gr := a.Resource.GroupResource()
	return gr == mutatingConfigsGR || gr == validatingConfigsGR
}

// webhooks returns the cached webhooks of c in order; a write that
// arrives before the cache could be filled is rejected (403, as
// kube-apiserver does), never admitted without its webhooks. The error
// unwraps to ErrWebhooksNotReady.
func (d *Webhooks) webhooks(ctx context.Context, plugin string, c *configCache, a *Attributes) ([]webhookSpec, error) {
	hooks, err := c.get(ctx, d.cfg.SyncTimeout)
	if err != nil {
		d.cfg.Logger.Warn("webhook configurations not synced, rejecting the request", "resource", a.Resource.String(), "name", objectName(a), "err", err)
		return nil, &PluginError{Plugin: plugin, Err: err,
			status: apierrors.NewForbidden(a.Resource.GroupResource(), objectName(a), err)}
	}
	return hooks, nil
}

// Admit calls every matching mutating webhook in order, applying their
// patches to a.Object in place, then once more those with
// reinvocationPolicy IfNeeded that a later webhook's change followed.
func (m *MutatingWebhook) Admit(ctx context.Context, a *Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, err := m.d.webhooks(ctx, m.Name(), m.d.mutating, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	var ran []int // IfNeeded webhooks called, and the change count when called
	var ranAt []int
	changes := 0
	for i := range hooks {
		changed, called, err := m.d.mutate(ctx, &hooks[i], a, false)
		if err != nil {
			return err
		}
		if changed {
			changes++
		}
		if called && hooks[i].ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			ran, ranAt = append(ran, i), append(ranAt, changes)
		}
	}
	for k, i := range ran {
		if changes > ranAt[k] {
			if _, _, err := m.d.mutate(ctx, &hooks[i], a, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// mutate calls one webhook if it matches and applies its patch.
func (d *Webhooks) mutate(ctx context.Context, w *webhookSpec, a *Attributes, reinvoke bool) (changed, called bool, err error) {
	ok, err := d.matches(ctx, w, a)
	if err != nil {
		return false, false, d.failure(w, err)
	}
	if !ok {
		return false, false, nil
	}
	resp, err := d.call(ctx, w, a)
	if err != nil {
		return false, true, d.failure(w, err)
	}
	if !resp.Allowed {
		return false, true, denied(w.Name, resp.Result)
	}
	reportResponse(ctx, w, resp.Warnings, resp.AuditAnnotations)
	if len(resp.Patch) == 0 || a.Object == nil {
		return false, true, nil
	}
	patched, err := applyJSONPatch(a.Object, a.Kind, resp.Patch)
	if err != nil {
		return false, true, apierrors.NewInternalError(fmt.Errorf("JSON patch of webhook %q: %w", w.Name, err))
	}
	if equality.Semantic.DeepEqual(patched, a.Object) {
		return false, true, nil
	}
	reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(patched).Elem())
	if d.cfg.Defaulter != nil {
		if err := d.cfg.Defaulter.Admit(ctx, a); err != nil {
			return true, true, err
		}
	}
	d.cfg.Logger.Debug("webhook patched object", "webhook", w.Name, "reinvocation", reinvoke, "resource", a.Resource.String(), "name", objectName(a))
	return true, true, nil
}

// Validate calls every matching validating webhook; the first rejection
// or failure (under failurePolicy Fail) is the error.
func (v *ValidatingWebhook) Validate(ctx context.Context, a *Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, err := v.d.webhooks(ctx, v.Name(), v.d.validating, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	// Matching is cheap and most webhooks do not match a given request,
	// so it runs in line; only the calls of the matching ones run in
	// parallel, as kube-apiserver's validating dispatcher does.
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i := range hooks {
		w := &hooks[i]
		ok, err := v.d.matches(ctx, w, a)
		if err != nil {
			errs[i] = v.d.failure(w, err)
			continue
		}
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := v.d.call(ctx, w, a)
			if err != nil {
				errs[i] = v.d.failure(w, err)
				return
			}
			if len(resp.Patch) > 0 {
				errs[i] = v.d.failure(w, errors.New("validating webhooks may not return patches"))
				return
			}
			if !resp.Allowed {
				errs[i] = denied(w.Name, resp.Result)
				return
			}
			reportResponse(ctx, w, resp.Warnings, resp.AuditAnnotations)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// failure applies the webhook's failurePolicy to an error calling it.
func (d *Webhooks) failure(w *webhookSpec, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == http.StatusBadRequest {
		return err // dry run not supported: not a call failure
	}
	if w.FailurePolicy == admissionregistrationv1.Ignore {
		d.cfg.Logger.Warn("failed calling webhook, failing open", "webhook", w.Name, "err", err)
		return nil
	}
	return apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: %w", w.Name, err))
}

func reportResponse(ctx context.Context, w *webhookSpec, warnings []string, annotations map[string]string) {
	for _, msg := range warnings {
		AddWarning(ctx, msg)
	}
	for k, v := range annotations {
		AddAuditAnnotation(ctx, w.Name+"/"+k, v)
	}
}
