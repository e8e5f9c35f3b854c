package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
	"github.com/podkit/podkit/apiserver/auth/nodeauthz"
	"github.com/podkit/podkit/apiserver/auth/rbac"
	"github.com/podkit/podkit/apiserver/storage"
)

// Authorization modes (--authorization-mode), as kube-apiserver names them.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
	ModeWebhook     = "Webhook"
)

// Admission plugin names (--enable-admission-plugins,
// --disable-admission-plugins), in the order Kubernetes runs them.
var admissionPluginOrder = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "PodSecurity", "Priority",
	"DefaultTolerationSeconds", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
}

// DefaultAdmissionPlugins are the plugins on unless disabled: Kubernetes'
// default set for the plugins podkit has, plus NodeRestriction (as kubeadm
// enables it; it only constrains kubelets).
func DefaultAdmissionPlugins() []string { return slices.Clone(admissionPluginOrder) }

// AuthorizationOptions are the authorization and admission settings,
// named as kube-apiserver's flags.
type AuthorizationOptions struct {
	// Modes is --authorization-mode. Empty means Node,RBAC when the server
	// authenticates (the secure default) and AlwaysAllow when it serves
	// insecurely (every request is system:admin anyway).
	Modes []string
	// WebhookConfigFile is a kubeconfig naming the SubjectAccessReview
	// webhook of the Webhook mode (--authorization-webhook-config-file);
	// the TTLs cache its answers.
	WebhookConfigFile              string
	WebhookCacheAuthorizedTTL      time.Duration
	WebhookCacheUnauthorizedTTL    time.Duration
	EnableAdmissionPlugins         []string
	DisableAdmissionPlugins        []string
	PodSecurityDefaults            admission.PodSecurityDefaults
	PodSecurityExemptions          admission.PodSecurityExemptions
	AdmissionWebhookResolveService admission.ServiceResolver
}

// AddAuthorizationFlags registers o's flags on fs with kube-apiserver's
// names.
func AddAuthorizationFlags(fs *pflag.FlagSet, o *AuthorizationOptions) {
	fs.StringSliceVar(&o.Modes, "authorization-mode", o.Modes,
		"ordered authorizers: AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook (default Node,RBAC; AlwaysAllow with --insecure-serving)")
	fs.StringVar(&o.WebhookConfigFile, "authorization-webhook-config-file", o.WebhookConfigFile,
		"kubeconfig of the SubjectAccessReview webhook used by --authorization-mode=Webhook")
	fs.DurationVar(&o.WebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", authz.DefaultWebhookAllowTTL,
		"how long to cache allowed answers of the authorization webhook")
	fs.DurationVar(&o.WebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", authz.DefaultWebhookDenyTTL,
		"how long to cache denied answers of the authorization webhook")
	fs.StringSliceVar(&o.EnableAdmissionPlugins, "enable-admission-plugins", o.EnableAdmissionPlugins,
		"admission plugins to enable besides the defaults ("+strings.Join(admissionPluginOrder, ", ")+")")
	fs.StringSliceVar(&o.DisableAdmissionPlugins, "disable-admission-plugins", o.DisableAdmissionPlugins,
		"admission plugins to disable, even default ones")
}

// NewAuthorizer builds the authorization chain of --authorization-mode
// over the server's store: system:masters first (always allowed, as in
// kube-apiserver), then each mode in order. It is what `podkit apiserver`
// and `podkit up` set as apiserver.Config.Authorizer; the server's
// RunControllers runs its watches.
func NewAuthorizer(st storage.Store, o AuthorizationOptions, log *slog.Logger) (auth.Authorizer, error) {
	if log == nil {
		log = slog.Default()
	}
	modes := o.Modes
	if len(modes) == 0 {
		modes = []string{ModeNode, ModeRBAC}
	}
	chain := []auth.Authorizer{authz.Privileged()}
	seen := map[string]bool{}
	for _, m := range modes {
		m = strings.TrimSpace(m)
		if seen[m] {
			return nil, fmt.Errorf("--authorization-mode: %s given twice", m)
		}
		seen[m] = true
		switch m {
		case ModeAlwaysAllow:
			chain = append(chain, authz.AlwaysAllow())
		case ModeAlwaysDeny:
			chain = append(chain, authz.AlwaysDeny())
		case ModeNode:
			a, err := nodeauthz.New(nodeauthz.Config{Pods: st, Logger: log})
			if err != nil {
				return nil, err
			}
			chain = append(chain, a)
		case ModeRBAC:
			a, err := rbac.New(rbac.Config{Store: st, Logger: log})
			if err != nil {
				return nil, err
			}
			chain = append(chain, a)
		case ModeWebhook:
			if o.WebhookConfigFile == "" {
				return nil, errors.New("--authorization-mode=Webhook needs --authorization-webhook-config-file")
			}
			a, err := authz.NewWebhookFromKubeconfig(o.WebhookConfigFile, authz.WebhookConfig{
				AllowTTL: o.WebhookCacheAuthorizedTTL, DenyTTL: o.WebhookCacheUnauthorizedTTL})
			if err != nil {
				return nil, err
			}
			chain = append(chain, a)
		default:
			return nil, fmt.Errorf("--authorization-mode: unknown mode %q (want %s, %s, %s, %s or %s)", m,
				ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC, ModeWebhook)
		}
	}
	return authz.Union(chain...), nil
}

// AdmissionPlugins returns the enabled plugin names, in Kubernetes' order.
func AdmissionPlugins(o AuthorizationOptions) ([]string, error) {
	on := map[string]bool{}
	for _, p := range DefaultAdmissionPlugins() {
		on[p] = true
	}
	for _, list := range [][]string{o.EnableAdmissionPlugins, o.DisableAdmissionPlugins} {
		for _, p := range list {
			if !slices.Contains(admissionPluginOrder, strings.TrimSpace(p)) {
				return nil, fmt.Errorf("unknown admission plugin %q (podkit has %s)", p, strings.Join(admissionPluginOrder, ", "))
			}
		}
	}
	for _, p := range o.EnableAdmissionPlugins {
		on[strings.TrimSpace(p)] = true
	}
	for _, p := range o.DisableAdmissionPlugins {
		delete(on, strings.TrimSpace(p))
	}
	var out []string
	for _, p := range admissionPluginOrder {
		if on[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

// NewAdmission builds the admission chain of the enabled plugins over st:
// the built-in ones, NodeRestriction, PodSecurity and the dynamic
// webhooks, with quota usage kept in sync after deletions when
// ResourceQuota is on. mountTokens is the ServiceAccount plugin's
// projected-token setting (on when the server issues tokens). With a
// webhook plugin enabled the chain is an authz.Runner whose Run keeps the
// webhook configurations cached: run it with the server
// (apiserver.Config.AdmissionWatches), or writes are rejected.
func NewAdmission(st storage.Store, o AuthorizationOptions, mountTokens bool, log *slog.Logger) (apiserver.Admission, error) {
	adm, webhooks, err := newAdmission(st, o, mountTokens, log)
	if err != nil || webhooks == nil {
		return adm, err
	}
	return &webhookCaching{Admission: adm, webhooks: webhooks}, nil
}

// newAdmission is NewAdmission, returning the webhook plugins apart (nil
// when neither is enabled) for the caller to run their cache.
func newAdmission(st storage.Store, o AuthorizationOptions, mountTokens bool, log *slog.Logger) (apiserver.Admission, *admission.Webhooks, error) {
	if log == nil {
		log = slog.Default()
	}
	names, err := AdmissionPlugins(o)
	if err != nil {
		return nil, nil, err
	}
	on := map[string]bool{}
	for _, n := range names {
		on[n] = true
	}
	b, err := admission.NewBuiltins(admission.BuiltinsConfig{Store: st, Logger: log, MountServiceAccountToken: mountTokens})
	if err != nil {
		return nil, nil, err
	}
	muts := []admission.Admitter{b.Defaulter}
	var vals []admission.Validator
	webhooks, err := admission.NewWebhooks(admission.WebhookConfig{Store: st, Logger: log, Defaulter: b.Defaulter,
		ResolveService: o.AdmissionWebhookResolveService})
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		switch n {
		case "NamespaceLifecycle":
			muts = append(muts, b.NamespaceLifecycle)
		case "LimitRanger":
			muts, vals = append(muts, b.LimitRanger), append(vals, b.LimitRanger)
		case "ServiceAccount":
			muts, vals = append(muts, b.ServiceAccount), append(vals, b.ServiceAccount)
		case "NodeRestriction":
			nr, err := admission.NewNodeRestriction(admission.NodeRestrictionConfig{Pods: st})
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, nr)
		case "PodSecurity":
			ps, err := admission.NewPodSecurity(admission.PodSecurityConfig{Store: st, Logger: log,
				Defaults: o.PodSecurityDefaults, Exemptions: o.PodSecurityExemptions})
			if err != nil {
				return nil, nil, err
			}
			vals = append(vals, ps)
		case "Priority":
			muts, vals = append(muts, b.Priority), append(vals, b.Priority)
		case "DefaultTolerationSeconds":
			muts = append(muts, b.DefaultTolerationSeconds)
		case "MutatingAdmissionWebhook":
			muts = append(muts, webhooks.Mutating())
		case "ValidatingAdmissionWebhook":
			vals = append(vals, webhooks.Validating())
		case "ResourceQuota":
			vals = append(vals, b.ResourceQuota)
		}
	}
	chain, err := admission.NewChain(muts, vals, admission.WithLogger(log))
	if err != nil {
		return nil, nil, err
	}
	var adm apiserver.Admission = chain
	if on["ResourceQuota"] {
		adm = &quotaSyncing{Chain: chain, quota: b.ResourceQuota, log: log}
	}
	if !on["MutatingAdmissionWebhook"] && !on["ValidatingAdmissionWebhook"] {
		webhooks = nil
	}
	return adm, webhooks, nil
}

// webhookCaching is NewAdmission's chain when it has the webhook plugins:
// its Run keeps their configurations cached from the store, and they
// reject writes until it has read them.
type webhookCaching struct {
	apiserver.Admission
	webhooks *admission.Webhooks
}

var _ authz.Runner = (*webhookCaching)(nil)

// Run keeps the webhook configurations cached until ctx is done.
func (w *webhookCaching) Run(ctx context.Context) { w.webhooks.Run(ctx) }

// Finish passes the outcome of an admitted write on to the chain.
func (w *webhookCaching) Finish(ctx context.Context, a *admission.Attributes, err error) {
	if f, ok := w.Admission.(admission.Finisher); ok {
		f.Finish(ctx, a, err)
	}
}

// configureAuthorization sets the server's authorizer and admission chain
// from opts (app.New calls it once authentication is configured).
func configureAuthorization(cfg *apiserver.Config, st storage.Store, opts Options) error {
	o := opts.Authorization
	if len(o.Modes) == 0 && opts.Secure.Insecure {
		o.Modes = []string{ModeAlwaysAllow}
	}
	a, err := NewAuthorizer(st, o, opts.Logger)
	if err != nil {
		return err
	}
	adm, webhooks, err := newAdmission(st, o, !opts.Secure.Insecure, opts.Logger)
	if err != nil {
		return err
	}
	cfg.Authorizer, cfg.Admission = a, adm
	if webhooks != nil {
		// The server runs the webhook configuration cache with its own
		// controllers, whatever later wraps cfg.Admission.
		cfg.AdmissionWatches = append(cfg.AdmissionWatches, webhooks.Run)
	}
	return nil
}
