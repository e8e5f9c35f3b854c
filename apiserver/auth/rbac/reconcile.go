package rbac

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/podkit/podkit/apiserver/storage"
)

// Reconcile puts the bootstrap policy into st, as kube-apiserver's RBAC
// post-start hook does: missing objects are created; existing ones
// annotated autoupdate=true (the default objects) get missing rules,
// labels, annotations and subjects added — nothing is ever removed, so an
// operator's additions survive, and autoupdate=false freezes an object.
// Aggregated roles get their aggregation rule back and, when created, the
// rules aggregation would give them.
//
// The objects are independent, so they are reconciled concurrently
// (reconcileWorkers at a time): on a first start the ~100 creates then
// share the store's commits (bolt's group commit: one fsync for many
// writes) instead of paying one each, which took a cluster's start-up from
// tens of milliseconds to a few. Every later start reads each object from
// the store's memory and compares it, writing nothing.
func Reconcile(ctx context.Context, st storage.Store, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(reconcileWorkers)
	roles := BootstrapClusterRoles()
	byName := map[string]*rbacv1.ClusterRole{}
	for i := range roles {
		byName[roles[i].Name] = &roles[i]
	}
	for i := range roles {
		want := roles[i].DeepCopy()
		if want.AggregationRule != nil {
			want.Rules = aggregateRules(want, byName)
		}
		g.Go(func() error {
			err := ensure(ctx, st, storage.Key(ClusterRolesGR, "", want.Name), want, func(cur runtime.Object) bool {
				have := cur.(*rbacv1.ClusterRole)
				changed := mergeMeta(&have.ObjectMeta, &want.ObjectMeta)
				if want.AggregationRule != nil {
					if !equality.Semantic.DeepEqual(have.AggregationRule, want.AggregationRule) {
						have.AggregationRule, changed = want.AggregationRule, true
					}
					return changed
				}
				for _, r := range want.Rules {
					if !containsRule(have.Rules, r) {
						have.Rules, changed = append(have.Rules, r), true
					}
				}
				return changed
			})
			if err != nil {
				return fmt.Errorf("clusterrole %s: %w", want.Name, err)
			}
			return nil
		})
	}
	for _, b := range BootstrapClusterRoleBindings() {
		want := b
		g.Go(func() error {
			if err := ensure(ctx, st, storage.Key(ClusterRoleBindingsGR, "", want.Name), &want, func(cur runtime.Object) bool {
				have := cur.(*rbacv1.ClusterRoleBinding)
				return mergeMeta(&have.ObjectMeta, &want.ObjectMeta) || mergeSubjects(&have.Subjects, want.Subjects)
			}); err != nil {
				return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
			}
			return nil
		})
	}
	for _, r := range BootstrapRoles() {
		want := r
		g.Go(func() error {
			if err := ensure(ctx, st, storage.Key(RolesGR, want.Namespace, want.Name), &want, func(cur runtime.Object) bool {
				have := cur.(*rbacv1.Role)
				changed := mergeMeta(&have.ObjectMeta, &want.ObjectMeta)
				for _, rl := range want.Rules {
					if !containsRule(have.Rules, rl) {
						have.Rules, changed = append(have.Rules, rl), true
					}
				}
				return changed
			}); err != nil {
				return fmt.Errorf("role %s/%s: %w", want.Namespace, want.Name, err)
			}
			return nil
		})
	}
	for _, b := range BootstrapRoleBindings() {
		want := b
		g.Go(func() error {
			if err := ensure(ctx, st, storage.Key(RoleBindingsGR, want.Namespace, want.Name), &want, func(cur runtime.Object) bool {
				have := cur.(*rbacv1.RoleBinding)
				return mergeMeta(&have.ObjectMeta, &want.ObjectMeta) || mergeSubjects(&have.Subjects, want.Subjects)
			}); err != nil {
				return fmt.Errorf("rolebinding %s/%s: %w", want.Namespace, want.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	log.Debug("reconciled the RBAC bootstrap policy")
	return nil
}

// reconcileWorkers bounds Reconcile's concurrent store calls: enough for
// the store to batch a first start's creates, few enough not to flood it.
const reconcileWorkers = 32

// ensure creates want under key, or lets fix add to the stored object
// (unless it opts out of updates); fix reports whether it changed it.
func ensure(ctx context.Context, st storage.Store, key string, want runtime.Object, fix func(cur runtime.Object) bool) error {
	cur, err := st.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		m := want.(metav1.Object)
		m.SetUID(uuid.NewUUID())
		m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		if _, err := st.Create(ctx, key, want); err != nil && !errors.Is(err, storage.ErrExists) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if m, ok := cur.(metav1.Object); ok && m.GetAnnotations()[AutoUpdateAnnotation] == "false" {
		return nil
	}
	if !fix(cur.DeepCopyObject()) {
		return nil
	}
	_, err = st.Update(ctx, key, func(obj runtime.Object) (runtime.Object, error) {
		obj = obj.DeepCopyObject()
		fix(obj)
		return obj, nil
	})
	return err
}

func mergeMeta(have, want *metav1.ObjectMeta) bool {
	changed := false
	for k, v := range want.Labels {
		if _, ok := have.Labels[k]; !ok {
			if have.Labels == nil {
				have.Labels = map[string]string{}
			}
			have.Labels[k], changed = v, true
		}
	}
	for k, v := range want.Annotations {
		if _, ok := have.Annotations[k]; !ok {
			if have.Annotations == nil {
				have.Annotations = map[string]string{}
			}
			have.Annotations[k], changed = v, true
		}
	}
	return changed
}

func mergeSubjects(have *[]rbacv1.Subject, want []rbacv1.Subject) bool {
	changed := false
	for _, s := range want {
		found := false
		for _, h := range *have {
			if h.Kind == s.Kind && h.Name == s.Name && h.Namespace == s.Namespace {
				found = true
				break
			}
		}
		if !found {
			*have, changed = append(*have, s), true
		}
	}
	return changed
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if sameRule(have, r) {
			return true
		}
	}
	return false
}

// sameRule is equality.Semantic.DeepEqual for PolicyRules (nil and empty
// lists alike) without reflection: a restart compares every bootstrap
// rule with the stored ones.
func sameRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}
