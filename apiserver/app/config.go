package app

import (
	"context"
	"fmt"
	"log/slog"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/openapi"
	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/validation"
)

// DefaultConfig is the reference API server configuration over st: the
// built-in admission chain (Kubernetes' default plugins, quota last),
// Kubernetes validation, kubectl tables and the OpenAPI documents.
func DefaultConfig(st storage.Store, log *slog.Logger) (*apiserver.Config, error) {
	return defaultConfig(st, log, false)
}

// defaultConfig is DefaultConfig; mountTokens makes the ServiceAccount
// plugin mount token volumes (only servers that issue tokens do).
func defaultConfig(st storage.Store, log *slog.Logger, mountTokens bool) (*apiserver.Config, error) {
	if log == nil {
		log = slog.Default()
	}
	builtins, err := admission.NewBuiltins(admission.BuiltinsConfig{Store: st, Logger: log, MountServiceAccountToken: mountTokens})
	if err != nil {
		return nil, err
	}
	chain, err := builtins.Chain(nil, nil, admission.WithLogger(log))
	if err != nil {
		return nil, err
	}
	resources := apiserver.DefaultResources()
	oa, err := openapi.NewHandler(OpenAPIResources(resources), openapi.Info{Title: "Kubernetes", Version: apiserver.DefaultVersion().GitVersion},
		openapi.WithScheme(scheme.New()), openapi.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI documents: %w", err)
	}
	return &apiserver.Config{
		Store:     st,
		Logger:    log,
		Resources: resources,
		Admission: &quotaSyncing{Chain: chain, quota: builtins.ResourceQuota, log: log},
		Validator: validation.Default(),
		OpenAPI:   oa,
	}, nil
}

// quotaSyncing recomputes a namespace's quota usage after what admission
// alone cannot account for: deletions and new quotas.
type quotaSyncing struct {
	*admission.Chain
	quota *admission.ResourceQuota
	log   *slog.Logger
}

var resourceQuotas = schema.GroupResource{Resource: "resourcequotas"}

// Finish passes the outcome on, then syncs quota status when needed.
func (q *quotaSyncing) Finish(ctx context.Context, a *admission.Attributes, err error) {
	q.Chain.Finish(ctx, a, err)
	if err != nil || a.DryRun || a.Namespace == "" {
		return
	}
	if a.Operation == admission.Delete || (a.Operation == admission.Create && a.Resource.GroupResource() == resourceQuotas) {
		if err := q.quota.SyncNamespace(ctx, a.Namespace); err != nil {
			q.log.Warn("syncing resource quota usage", "namespace", a.Namespace, "err", err)
		}
	}
}

// OpenAPIResources describes served resources for the OpenAPI generator.
func OpenAPIResources(resources []*apiserver.Resource) []openapi.Resource {
	var out []openapi.Resource
	for _, r := range resources {
		verbs := r.Verbs
		if verbs == nil {
			verbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
		}
		or := openapi.Resource{
			GroupVersionKind:    r.GroupVersionKind(),
			Resource:            r.Resource,
			Namespaced:          r.Namespaced,
			Verbs:               verbs,
			Object:              r.New(),
			DeleteReturnsObject: true,
		}
		if r.NewList != nil {
			or.List = r.NewList()
		}
		for _, sub := range r.Subresources {
			if sub == "log" {
				continue // streaming subresources are not described
			}
			s := openapi.Subresource{Name: sub, Verbs: []string{"get", "patch", "update"}}
			switch sub {
			case "scale":
				s.GroupVersionKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
				s.Object = &autoscalingv1.Scale{}
			case "binding":
				s.GroupVersionKind = corev1.SchemeGroupVersion.WithKind("Binding")
				s.Object = &corev1.Binding{}
				s.Verbs = []string{"create"}
			case "finalize":
				s.Verbs = []string{"update"}
			case "token":
				s.GroupVersionKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
				s.Object = &authenticationv1.TokenRequest{}
				s.Verbs = []string{"create"}
			}
			or.Subresources = append(or.Subresources, s)
		}
		out = append(out, or)
	}
	return out
}
