package rbac

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
	"github.com/podkit/podkit/apiserver/internal/storewatch"
	"github.com/podkit/podkit/apiserver/storage"
)

// Group resources of the RBAC objects in the store.
var (
	ClusterRolesGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	ClusterRoleBindingsGR = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
	RolesGR               = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
	RoleBindingsGR        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
)

// Config configures the RBAC authorizer.
type Config struct {
	// Store is the API server's store, read (and, for the bootstrap policy
	// and aggregation, written). Required.
	Store storage.Store
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// SkipBootstrap leaves the bootstrap policy out of Run (for tests and
	// clusters that manage their own).
	SkipBootstrap bool
	// RetryInterval is the pause after a failed list, watch or reconcile;
	// default one second.
	RetryInterval time.Duration
	// SyncTimeout bounds how long Authorize waits for the first list after
	// Run starts; default 30 seconds.
	SyncTimeout time.Duration
}

// Authorizer is the RBAC authorizer. Run must be running for it to decide
// (the API server's RunControllers runs it when it is the configured
// authorizer or part of an authz.Chain).
type Authorizer struct {
	cfg    Config
	log    *slog.Logger
	ix     *index
	synced *storewatch.Synced
}

var (
	_ auth.Authorizer     = (*Authorizer)(nil)
	_ authz.Runner        = (*Authorizer)(nil)
	_ authz.RulesResolver = (*Authorizer)(nil)
)

// New builds an RBAC authorizer over cfg.Store.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Store == nil {
		return nil, errors.New("rbac: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = time.Second
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 30 * time.Second
	}
	return &Authorizer{cfg: cfg, log: cfg.Logger, ix: newIndex(), synced: storewatch.NewSynced()}, nil
}

// Run reconciles the bootstrap policy, then watches the four RBAC
// resources and keeps aggregated ClusterRoles current, until ctx is done.
func (a *Authorizer) Run(ctx context.Context) {
	if !a.cfg.SkipBootstrap {
		for {
			err := Reconcile(ctx, a.cfg.Store, a.log)
			if err == nil || ctx.Err() != nil {
				break
			}
			a.log.Warn("reconciling the RBAC bootstrap policy", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(a.cfg.RetryInterval):
			}
		}
	}
	var wg sync.WaitGroup
	var pending sync.WaitGroup
	watches := []struct {
		gr schema.GroupResource
		h  storewatch.Handler
	}{
		{ClusterRolesGR, clusterRoleHandler{a.ix}},
		{RolesGR, roleHandler{a.ix}},
		{ClusterRoleBindingsGR, clusterRoleBindingHandler{a.ix}},
		{RoleBindingsGR, roleBindingHandler{a.ix}},
	}
	pending.Add(len(watches))
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			storewatch.Run(ctx, a.cfg.Store, storage.Prefix(w.gr), w.h, pending.Done, a.log, a.cfg.RetryInterval)
		}()
	}
	go func() {
		pending.Wait()
		a.synced.Done()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.runAggregation(ctx)
	}()
	wg.Wait()
}

// WaitForSync waits until the index holds the store's RBAC objects.
func (a *Authorizer) WaitForSync(ctx context.Context) error {
	return a.synced.Wait(ctx)
}

func (a *Authorizer) waitSynced(ctx context.Context) error {
	if err := a.synced.WaitTimeout(ctx, a.cfg.SyncTimeout); err != nil {
		return fmt.Errorf("rbac: the authorizer has not synced with the store: %w", err)
	}
	return nil
}

// Authorize allows the request when a rule of a role bound to the user
// (cluster-wide, or in the request's namespace) grants it; otherwise it
// has no opinion. RBAC never denies.
func (a *Authorizer) Authorize(ctx context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.User == nil {
		return auth.DecisionNoOpinion, "", nil
	}
	if err := a.waitSynced(ctx); err != nil {
		return auth.DecisionNoOpinion, "", err
	}
	allowed := false
	var missing []string
	a.visit(attrs.User, attrs.Namespace, attrs.ResourceRequest, func(rules []rbacv1.PolicyRule, miss string) bool {
		if miss != "" {
			missing = append(missing, miss)
			return true
		}
		for i := range rules {
			if RuleAllows(attrs, &rules[i]) {
				allowed = true
				return false
			}
		}
		return true
	})
	if allowed {
		return auth.DecisionAllow, "", nil
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return auth.DecisionNoOpinion, "RBAC: " + strings.Join(missing, ", "), nil
	}
	return auth.DecisionNoOpinion, "", nil
}

// visit calls fn with the rules of every role bound to u that applies in
// namespace (cluster bindings always; role bindings of namespace when it
// is set and the request is for resources), or with a description of a
// binding whose role is missing. fn returns false to stop.
func (a *Authorizer) visit(u auth.User, namespace string, resources bool, fn func(rules []rbacv1.PolicyRule, missing string) bool) {
	ix := a.ix
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	keys := userKeys(u)
	seen := map[string]bool{}
	for _, k := range keys {
		for name, b := range ix.crbBySubject[k] {
			if seen[name] || b.RoleRef.Kind != "ClusterRole" {
				continue
			}
			seen[name] = true
			r, ok := ix.clusterRoles[b.RoleRef.Name]
			if !ok {
				if !fn(nil, fmt.Sprintf("clusterrole.rbac.authorization.k8s.io %q not found", b.RoleRef.Name)) {
					return
				}
				continue
			}
			if !fn(r.Rules, "") {
				return
			}
		}
	}
	if namespace == "" || !resources {
		return
	}
	byKey := ix.rbBySubject[namespace]
	seen = map[string]bool{}
	for _, k := range keys {
		for name, b := range byKey[k] {
			if seen[name] {
				continue
			}
			seen[name] = true
			var rules []rbacv1.PolicyRule
			missing := ""
			switch b.RoleRef.Kind {
			case "ClusterRole":
				if r, ok := ix.clusterRoles[b.RoleRef.Name]; ok {
					rules = r.Rules
				} else {
					missing = fmt.Sprintf("clusterrole.rbac.authorization.k8s.io %q not found", b.RoleRef.Name)
				}
			case "Role":
				if r, ok := ix.roles[namespace+"/"+b.RoleRef.Name]; ok {
					rules = r.Rules
				} else {
					missing = fmt.Sprintf("role.rbac.authorization.k8s.io %q not found", b.RoleRef.Name)
				}
			default:
				continue
			}
			if !fn(rules, missing) {
				return
			}
		}
	}
}

// RulesFor lists the rules of every role bound to u that applies in
// namespace, for SelfSubjectRulesReview.
func (a *Authorizer) RulesFor(ctx context.Context, u auth.User, namespace string) ([]authz.ResourceRule, []authz.NonResourceRule, bool, error) {
	if u == nil {
		return nil, nil, false, nil
	}
	if err := a.waitSynced(ctx); err != nil {
		return nil, nil, true, err
	}
	var res []authz.ResourceRule
	var non []authz.NonResourceRule
	incomplete := false
	a.visit(u, namespace, true, func(rules []rbacv1.PolicyRule, missing string) bool {
		if missing != "" {
			incomplete = true
			return true
		}
		for _, r := range rules {
			if len(r.NonResourceURLs) > 0 {
				non = append(non, authz.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
				continue
			}
			res = append(res, authz.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		return true
	})
	return res, non, incomplete, nil
}
