package admission

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// quotaNamespace serialises quota admission in one namespace and remembers
// the objects admitted there that storage may not hold yet.
type quotaNamespace struct {
	mu    sync.Mutex
	users int // goroutines holding or waiting for mu; guarded by ResourceQuota.mu
	// reservations by storage key; guarded by mu.
	reservations map[string]reservation
}

// reservation is an admitted object on its way to storage.
type reservation struct {
	gr  schema.GroupResource
	obj runtime.Object
	// owner is the request's object, identifying the request in Finish.
	owner runtime.Object
	// baseRV is the resourceVersion the write replaces; "" for a create.
	baseRV  string
	expires time.Time
}

func (ns *quotaNamespace) reserve(key string, r reservation, log *slog.Logger) {
	if key == "" || key[len(key)-1] == '/' {
		// No name yet (generateName unresolved): the object could never be
		// matched with its stored self, so it is not remembered.
		log.Debug("quota: not reserving usage of an unnamed object", "resource", r.gr.String())
		return
	}
	ns.reservations[key] = r
}

// lock acquires the namespace's admission lock.
func (q *ResourceQuota) lock(namespace string) *quotaNamespace {
	q.mu.Lock()
	ns, ok := q.namespaces[namespace]
	if !ok {
		ns = &quotaNamespace{reservations: map[string]reservation{}}
		q.namespaces[namespace] = ns
	}
	ns.users++
	q.mu.Unlock()
	ns.mu.Lock()
	now := q.now()
	for key, r := range ns.reservations {
		if !now.Before(r.expires) {
			delete(ns.reservations, key)
		}
	}
	return ns
}

// tracks reports whether the namespace has reservations or users: a
// write's Finish has nothing to release in one that has neither (its own
// Validate, had it reserved, would have left the reservation there).
func (q *ResourceQuota) tracks(namespace string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.namespaces[namespace]
	return ok
}

// unlock releases the lock and forgets the namespace when nobody uses it
// and nothing is reserved there.
func (q *ResourceQuota) unlock(namespace string, ns *quotaNamespace) {
	empty := len(ns.reservations) == 0
	ns.mu.Unlock()
	q.mu.Lock()
	ns.users--
	if ns.users == 0 && empty {
		delete(q.namespaces, namespace)
	}
	q.mu.Unlock()
}

// usageCalculator sums what a namespace's objects consume, listing each
// resource from storage at most once and counting reserved objects in place
// of (or in addition to) what storage holds. Callers hold the namespace
// lock.
type usageCalculator struct {
	ctx       context.Context
	store     ObjectLister
	namespace string
	ns        *quotaNamespace
	now       time.Time
	objects   map[schema.GroupResource][]runtime.Object
}

// list returns the namespace's objects of a resource as they will be once
// the admitted writes land.
func (u *usageCalculator) list(gr schema.GroupResource) ([]runtime.Object, error) {
	if objs, ok := u.objects[gr]; ok {
		return objs, nil
	}
	stored, err := listAll(u.ctx, u.store, storage.Key(gr, u.namespace, ""))
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(stored))
	seen := map[string]bool{}
	for _, obj := range stored {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		key := storage.Key(gr, u.namespace, m.GetName())
		seen[key] = true
		if r, ok := u.ns.reservations[key]; ok {
			if r.baseRV != "" && r.baseRV == m.GetResourceVersion() {
				out = append(out, r.obj) // the admitted update has not landed yet
				continue
			}
			delete(u.ns.reservations, key) // the admitted write landed
		}
		out = append(out, obj)
	}
	for key, r := range u.ns.reservations {
		if r.gr != gr || seen[key] {
			continue
		}
		if r.baseRV != "" {
			delete(u.ns.reservations, key) // updated object is gone
			continue
		}
		out = append(out, r.obj) // admitted create not stored yet
	}
	if u.objects == nil {
		u.objects = map[schema.GroupResource][]runtime.Object{}
	}
	u.objects[gr] = out
	return out, nil
}

// quotaUsage returns what the namespace consumes of each of the quota's
// hard resources, counting only objects in the quota's scopes.
func (u *usageCalculator) quotaUsage(rq *corev1.ResourceQuota) (corev1.ResourceList, error) {
	byResource := map[schema.GroupResource][]corev1.ResourceName{}
	for _, name := range sortedNames(rq.Spec.Hard) {
		if gr, ok := trackingResource(name); ok {
			byResource[gr] = append(byResource[gr], name)
		}
	}
	used := corev1.ResourceList{}
	for gr, names := range byResource {
		ev := evaluatorFor(gr)
		objs, err := u.list(gr)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if !scopesMatch(ev, rq, obj) {
				continue
			}
			usage, err := ev.usage(obj, u.now)
			if err != nil {
				return nil, err
			}
			used = addLists(used, maskList(usage, names))
		}
	}
	for name := range rq.Spec.Hard {
		if _, ok := used[name]; !ok {
			used[name] = resource.Quantity{Format: resource.DecimalSI}
		}
	}
	return used, nil
}
