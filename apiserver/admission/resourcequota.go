package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// ResourceQuotaName names the ResourceQuota plugin.
const ResourceQuotaName = "ResourceQuota"

// ResourceQuota is Kubernetes' ResourceQuota admission plugin. For every
// create (and for services and claims every update) in a namespace with
// ResourceQuotas, it
//
//  1. finds the quotas that track what the object consumes and whose scopes
//     (Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass,
//     CrossNamespacePodAffinity) match it;
//  2. rejects a pod that does not state a cpu or memory request or limit
//     such a quota tracks (`failed quota: q: must specify limits.cpu for: app`);
//  3. computes the namespace's usage from storage, plus the objects it has
//     admitted that are not stored yet, and rejects the object if it would
//     exceed a quota (`exceeded quota: q, requested: pods=1, used: pods=2,
//     limited: pods=2`);
//  4. unless the request is a dry run, writes each quota's status (hard from
//     spec, used including the new object) with a compare-and-swap update.
//
// Admissions in one namespace are serialised, and each admitted object is
// remembered until it shows up in storage (or a TTL passes, for writes that
// failed after admission), so concurrent creates cannot both slip past a
// limit. Tracked resources: object counts (pods, services, configmaps,
// secrets, replicationcontrollers, resourcequotas, persistentvolumeclaims,
// count/<resource>.<group>), services.nodeports, services.loadbalancers,
// pod compute resources (cpu, memory, ephemeral-storage with and without the
// requests./limits. prefix, hugepages, requests.<extended resource>) and
// claim storage (requests.storage, per storage class).
//
// Put it last among the validators, as Kubernetes does.
type ResourceQuota struct {
	store QuotaStore
	now   func() time.Time
	ttl   time.Duration
	log   *slog.Logger

	mu         sync.Mutex
	namespaces map[string]*quotaNamespace
}

var (
	_ Validator = (*ResourceQuota)(nil)
	_ Finisher  = (*ResourceQuota)(nil)
	_ Handler   = (*ResourceQuota)(nil)
	_ Namer     = (*ResourceQuota)(nil)
)

// ResourceQuotaConfig configures NewResourceQuota.
type ResourceQuotaConfig struct {
	// Store reads the namespace's objects and updates quota status.
	// Required.
	Store QuotaStore
	// Clock tells the time (pods past their deletion grace period stop
	// counting; reservations expire). Defaults to time.Now.
	Clock func() time.Time
	// ReservationTTL bounds how long an admitted object that never reached
	// storage keeps counting. Defaults to 30s.
	ReservationTTL time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// NewResourceQuota returns the ResourceQuota plugin.
func NewResourceQuota(cfg ResourceQuotaConfig) (*ResourceQuota, error) {
	if cfg.Store == nil {
		return nil, errors.New("admission: ResourceQuota needs a store")
	}
	if cfg.ReservationTTL < 0 {
		return nil, errors.New("admission: ResourceQuota needs a non-negative reservation TTL")
	}
	q := &ResourceQuota{store: cfg.Store, now: cfg.Clock, ttl: cfg.ReservationTTL, log: cfg.Logger,
		namespaces: map[string]*quotaNamespace{}}
	if q.now == nil {
		q.now = time.Now
	}
	if q.ttl == 0 {
		q.ttl = 30 * time.Second
	}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	return q, nil
}

// Name implements Namer.
func (*ResourceQuota) Name() string { return ResourceQuotaName }

// Handles implements Handler: create and update.
func (*ResourceQuota) Handles(op Operation) bool { return op == Create || op == Update }

// Resources quota never charges.
var quotaIgnored = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// errQuotaChanged: a quota changed between reading and writing it; the
// admission is evaluated again.
var errQuotaChanged = errors.New("resource quota changed during admission")

const maxQuotaAttempts = 5

// Validate admits or rejects the object against the namespace's quotas.
func (q *ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	gr := a.Resource.GroupResource()
	if a.Subresource != "" || a.Namespace == "" || a.Object == nil || gr == namespacesGR || quotaIgnored[gr] {
		return nil
	}
	ev := evaluatorFor(gr)
	if !ev.handles(a.Operation) {
		return nil
	}
	ns := q.lock(a.Namespace)
	defer q.unlock(a.Namespace, ns)
	for range maxQuotaAttempts {
		err := q.admit(ctx, a, gr, ev, ns)
		if !errors.Is(err, errQuotaChanged) {
			return err
		}
	}
	return apierrors.NewInternalError(fmt.Errorf("resource quotas in namespace %s kept changing during admission", a.Namespace))
}

func (q *ResourceQuota) admit(ctx context.Context, a *Attributes, gr schema.GroupResource, ev quotaEvaluator, ns *quotaNamespace) error {
	quotas, err := listTyped[*corev1.ResourceQuota](ctx, q.store, storage.Key(resourceQuotasGR, a.Namespace, ""))
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing resource quotas: %w", err))
	}
	var matched []*corev1.ResourceQuota
	for _, rq := range quotas {
		tracked := trackedNames(ev, rq)
		if len(tracked) == 0 || !scopesMatch(ev, rq, a.Object) {
			continue
		}
		if err := ev.constraints(tracked, a.Object); err != nil {
			return NewForbidden(a, fmt.Errorf("failed quota: %s: %w", rq.Name, err))
		}
		matched = append(matched, rq)
	}
	if len(matched) == 0 {
		return nil
	}

	now := q.now()
	delta, err := ev.usage(a.Object, now)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if neg := negativeResources(delta); len(neg) > 0 {
		return NewForbidden(a, fmt.Errorf("quota usage is negative for resource(s): %s", joinNames(neg)))
	}
	baseRV := ""
	if a.Operation == Update {
		if a.OldObject == nil {
			return NewForbidden(a, errors.New("unable to get previous usage since prior version of object was not found"))
		}
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetResourceVersion() != "" {
			baseRV = m.GetResourceVersion()
			prev, err := ev.usage(a.OldObject, now)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			delta = subtractFloorZero(delta, prev)
		}
	}
	delta = removeZeros(delta)
	if len(delta) == 0 {
		return nil
	}

	calc := &usageCalculator{ctx: ctx, store: q.store, namespace: a.Namespace, ns: ns, now: now}
	type statusWrite struct {
		rq     *corev1.ResourceQuota
		status corev1.ResourceQuotaStatus
	}
	var writes []statusWrite
	for _, rq := range matched {
		tracked := trackedNames(ev, rq)
		requested := removeZeros(maskList(delta, tracked))
		if len(requested) == 0 {
			continue
		}
		used, err := calc.quotaUsage(rq)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("computing usage of quota %s: %w", rq.Name, err))
		}
		newUsed := addLists(used, requested)
		if over := exceeding(maskList(newUsed, sortedNames(requested)), maskList(rq.Spec.Hard, tracked)); len(over) > 0 {
			return NewForbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				rq.Name, prettyPrint(maskList(requested, over)), prettyPrint(maskList(used, over)),
				prettyPrint(maskList(rq.Spec.Hard, over))))
		}
		writes = append(writes, statusWrite{rq: rq, status: quotaStatus(rq, newUsed)})
	}
	if a.DryRun || len(writes) == 0 {
		return nil
	}
	for _, w := range writes {
		if err := q.writeStatus(ctx, w.rq, w.status); err != nil {
			return err
		}
	}
	ns.reserve(storage.Key(gr, a.Namespace, objectNameOf(a.Object)), reservation{
		gr: gr, obj: a.Object.DeepCopyObject(), owner: a.Object, baseRV: baseRV, expires: now.Add(q.ttl),
	}, q.log)
	return nil
}

// Finish forgets the usage reserved for an admitted write once it ended:
// stored objects are counted from storage from now on, failed ones not at
// all. Without Finish, a reservation lasts until storage shows the object
// or ReservationTTL passes.
func (q *ResourceQuota) Finish(_ context.Context, a *Attributes, _ error) {
	if a.Object == nil || a.Namespace == "" || !q.tracks(a.Namespace) {
		return
	}
	key := storage.Key(a.Resource.GroupResource(), a.Namespace, objectNameOf(a.Object))
	ns := q.lock(a.Namespace)
	if r, ok := ns.reservations[key]; ok && r.owner == a.Object {
		delete(ns.reservations, key)
	}
	q.unlock(a.Namespace, ns)
}

// SyncNamespace recomputes and writes the status of every quota in the
// namespace. The API server calls it after creating a ResourceQuota and
// after deleting objects, which admission does not see; a quota
// controller may call it periodically.
func (q *ResourceQuota) SyncNamespace(ctx context.Context, namespace string) error {
	ns := q.lock(namespace)
	defer q.unlock(namespace, ns)
	for range maxQuotaAttempts {
		err := q.sync(ctx, namespace, ns)
		if !errors.Is(err, errQuotaChanged) {
			return err
		}
	}
	return fmt.Errorf("syncing quotas of namespace %s: %w", namespace, errQuotaChanged)
}

func (q *ResourceQuota) sync(ctx context.Context, namespace string, ns *quotaNamespace) error {
	quotas, err := listTyped[*corev1.ResourceQuota](ctx, q.store, storage.Key(resourceQuotasGR, namespace, ""))
	if err != nil {
		return fmt.Errorf("listing resource quotas: %w", err)
	}
	calc := &usageCalculator{ctx: ctx, store: q.store, namespace: namespace, ns: ns, now: q.now()}
	for _, rq := range quotas {
		used, err := calc.quotaUsage(rq)
		if err != nil {
			return fmt.Errorf("computing usage of quota %s: %w", rq.Name, err)
		}
		if err := q.writeStatus(ctx, rq, quotaStatus(rq, used)); err != nil {
			return err
		}
	}
	return nil
}

// quotaStatus is the status a quota should have: hard copied from spec and
// used for exactly the hard resources.
func quotaStatus(rq *corev1.ResourceQuota, used corev1.ResourceList) corev1.ResourceQuotaStatus {
	return corev1.ResourceQuotaStatus{Hard: rq.Spec.Hard.DeepCopy(), Used: maskList(used, sortedNames(rq.Spec.Hard))}
}

var errStatusUnchanged = errors.New("quota status unchanged")

// writeStatus stores st as rq's status if rq's spec is still what the
// status was computed from; errQuotaChanged otherwise.
func (q *ResourceQuota) writeStatus(ctx context.Context, rq *corev1.ResourceQuota, st corev1.ResourceQuotaStatus) error {
	key := storage.Key(resourceQuotasGR, rq.Namespace, rq.Name)
	_, err := q.store.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
		c, ok := cur.(*corev1.ResourceQuota)
		if !ok {
			return nil, fmt.Errorf("stored object under %s is %T", key, cur)
		}
		if c.UID != rq.UID || !equality.Semantic.DeepEqual(c.Spec, rq.Spec) {
			return nil, errQuotaChanged
		}
		if equality.Semantic.DeepEqual(c.Status, st) {
			return nil, errStatusUnchanged
		}
		c.Status = st
		return c, nil
	})
	switch {
	case err == nil, errors.Is(err, errStatusUnchanged):
		return nil
	case errors.Is(err, errQuotaChanged), errors.Is(err, storage.ErrNotFound):
		return errQuotaChanged
	}
	return apierrors.NewInternalError(fmt.Errorf("updating status of resource quota %s/%s: %w", rq.Namespace, rq.Name, err))
}

// trackedNames lists the resources of the quota's spec.hard the evaluator
// measures.
func trackedNames(ev quotaEvaluator, rq *corev1.ResourceQuota) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range sortedNames(rq.Spec.Hard) {
		if ev.tracks(name) {
			out = append(out, name)
		}
	}
	return out
}

// scopesMatch reports whether obj falls into every scope of the quota.
func scopesMatch(ev quotaEvaluator, rq *corev1.ResourceQuota, obj runtime.Object) bool {
	for _, sel := range quotaScopes(rq) {
		if !ev.matchesScope(sel, obj) {
			return false
		}
	}
	return true
}

func quotaScopes(rq *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range rq.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if rq.Spec.ScopeSelector != nil {
		out = append(out, rq.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

func objectNameOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}
