package rbac

import (
	"context"
	"errors"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// aggregateRules is the union of the rules of the ClusterRoles (other than
// role itself) that role's aggregationRule selects, in name order without
// duplicates — what Kubernetes' ClusterRole aggregation controller writes.
func aggregateRules(role *rbacv1.ClusterRole, all map[string]*rbacv1.ClusterRole) []rbacv1.PolicyRule {
	if role.AggregationRule == nil {
		return role.Rules
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []rbacv1.PolicyRule
	for _, ls := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			continue
		}
		for _, n := range names {
			if n == role.Name {
				continue
			}
			src := all[n]
			if !sel.Matches(labels.Set(src.Labels)) {
				continue
			}
			for _, r := range src.Rules {
				if !containsRule(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// runAggregation rewrites aggregated ClusterRoles whenever a ClusterRole
// changes, until ctx is done.
func (a *Authorizer) runAggregation(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.ix.changed:
		}
		if err := a.aggregate(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("aggregating cluster roles", "err", err)
			a.ix.signal()
		}
	}
}

func (a *Authorizer) aggregate(ctx context.Context) error {
	type update struct {
		name  string
		rules []rbacv1.PolicyRule
	}
	var updates []update
	a.ix.mu.RLock()
	for _, r := range a.ix.clusterRoles {
		if r.AggregationRule == nil {
			continue
		}
		want := aggregateRules(r, a.ix.clusterRoles)
		if !equality.Semantic.DeepEqual(want, r.Rules) && !(len(want) == 0 && len(r.Rules) == 0) {
			updates = append(updates, update{r.Name, want})
		}
	}
	a.ix.mu.RUnlock()
	var errs []error
	for _, u := range updates {
		_, err := a.cfg.Store.Update(ctx, storage.Key(ClusterRolesGR, "", u.name), func(cur runtime.Object) (runtime.Object, error) {
			r := cur.(*rbacv1.ClusterRole).DeepCopy()
			r.Rules = u.rules
			return r, nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
