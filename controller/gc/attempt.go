package gc

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	// errVirtualDeleteQueued: the item does not exist; the graph builder
	// will remove it and wake its dependents.
	errVirtualDeleteQueued = errors.New("virtual delete event queued")
	// errNamespacedOwnerOfClusterScoped: a cluster-scoped object names a
	// namespaced owner, which can never resolve; retrying is useless.
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped object references a namespaced owner")
)

// processAttemptToDelete handles one item of the attempt-to-delete queue.
// Items are retried with backoff until they succeed: the graph has no
// periodic resync to bring them back.
func (gc *GarbageCollector) processAttemptToDelete(ctx context.Context) bool {
	n, quit := gc.attemptToDelete.Get()
	if quit {
		return false
	}
	defer gc.attemptToDelete.Done(n)
	if gc.attemptToDeleteWorker(ctx, n) {
		gc.attemptToDelete.AddRateLimited(n)
	} else {
		gc.attemptToDelete.Forget(n)
	}
	return true
}

// attemptToDeleteWorker returns whether n must be retried.
func (gc *GarbageCollector) attemptToDeleteWorker(ctx context.Context, n *node) bool {
	if !n.isObserved() {
		cur := gc.graph.read(n.getIdentity().UID)
		if cur == nil || cur != n || cur.isObserved() {
			// Removed meanwhile, or now backed by an observed object.
			return false
		}
	}
	err := gc.attemptToDeleteItem(ctx, n)
	switch {
	case errors.Is(err, errVirtualDeleteQueued), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return false
	case err != nil:
		if ctx.Err() == nil {
			gc.log.Debug("garbage collecting item failed", "item", n.getIdentity(), "err", err)
		}
		return true
	case !n.isObserved():
		// An owner that exists but has not been seen through an informer
		// yet: check again until it is (or is found gone).
		return true
	}
	return false
}

// attemptToDeleteItem deletes n if none of its owners exists (verified by
// live reads), removes references to absent or foreground-deleting owners
// when some owner still exists, and advances n's own foreground deletion.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, n *node) error {
	if n.isBeingDeleted() && !n.isDeletingDependents() {
		return nil
	}
	id := n.getIdentity()
	latest, err := gc.getObject(ctx, id)
	switch {
	case apierrors.IsNotFound(err):
		gc.enqueueVirtualDelete(gc.verifiedIdentity(id))
		return errVirtualDeleteQueued
	case err != nil:
		return err
	case latest.UID != id.UID:
		gc.enqueueVirtualDelete(gc.verifiedIdentity(id))
		return errVirtualDeleteQueued
	}
	if n.isDeletingDependents() {
		return gc.processDeletingDependents(ctx, n)
	}
	refs := latest.OwnerReferences
	if len(refs) == 0 {
		return nil
	}
	solid, dangling, waiting, err := gc.classifyReferences(ctx, id, refs)
	if err != nil {
		return err
	}
	switch {
	case len(solid) != 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// Keep the object for its live owners; references to absent owners
		// and to owners deleting in the foreground (which would wait for
		// this object forever) go.
		gc.log.Debug("removing dangling and waiting owner references", "item", id, "dangling", uids(dangling), "waiting", uids(waiting))
		return gc.removeOwnerReferences(ctx, id, append(uids(dangling), uids(waiting)...)...)
	case len(waiting) != 0 && n.dependentsCount() != 0:
		// An owner waits for this object in the foreground, and this object
		// has dependents of its own: delete it in the foreground too, so its
		// blocking dependents are honoured. A dependent already deleting in
		// the foreground may be waiting on us: break the cycle.
		for _, dep := range n.getDependents() {
			if dep.isDeletingDependents() {
				if err := gc.unblockOwnerReferences(ctx, id); err != nil {
					return err
				}
				break
			}
		}
		gc.log.Debug("deleting item in the foreground", "item", id)
		return gc.deleteObject(ctx, id, latest.ResourceVersion, metav1.DeletePropagationForeground)
	default:
		// No owner left: collect it, with the policy its own finalizers ask.
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		gc.log.Debug("deleting item without owners", "item", id, "policy", policy)
		return gc.deleteObject(ctx, id, latest.ResourceVersion, policy)
	}
}

// verifiedIdentity is id with the namespace cleared for a cluster-scoped
// kind: that is how the object was looked up.
func (gc *GarbageCollector) verifiedIdentity(id objectReference) objectReference {
	if _, namespaced, err := gc.resolve(id.APIVersion, id.Kind); err == nil && !namespaced {
		id.Namespace = ""
	}
	return id
}

// processDeletingDependents finishes a foreground deletion once no
// dependent blocks it, and otherwise makes sure the blocking ones are being
// deleted.
func (gc *GarbageCollector) processDeletingDependents(ctx context.Context, n *node) error {
	blocking := n.blockingDependents()
	if len(blocking) == 0 {
		gc.log.Debug("foreground deletion done, removing finalizer", "owner", n.getIdentity())
		return gc.removeFinalizer(ctx, n.getIdentity(), metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.isDeletingDependents() {
			gc.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// classifyReferences sorts an item's owner references: solid (the owner
// exists and is not deleting in the foreground), dangling (absent, or
// another object by that name) and waiting (deleting in the foreground).
func (gc *GarbageCollector) classifyReferences(ctx context.Context, item objectReference, refs []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := gc.isDangling(ctx, ref, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case owner.DeletionTimestamp != nil && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling reads the owner live (unless it is cached as absent). A
// namespaced owner is looked for in the dependent's namespace: owners
// cannot be in another namespace.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, item objectReference) (bool, *metav1.PartialObjectMetadata, error) {
	gvr, namespaced, err := gc.resolve(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if item.Namespace == "" && namespaced {
		gc.recordInvalidClusterScopedRef(item, ref)
		return false, nil, fmt.Errorf("%s: owner %s: %w", item, coordinates(ref), errNamespacedOwnerOfClusterScoped)
	}
	key := coordinates(ref)
	if namespaced {
		key.Namespace = item.Namespace
	}
	if gc.absent.has(key) {
		return true, nil, nil
	}
	owner, err := gc.metadata.Resource(gvr).Namespace(key.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gc.absent.add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, fmt.Errorf("reading owner %s of %s: %w", key, item, err)
	case owner.UID != ref.UID:
		gc.absent.add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

func (gc *GarbageCollector) recordInvalidClusterScopedRef(item objectReference, ref metav1.OwnerReference) {
	obj := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: item.APIVersion, Kind: item.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: item.Name, UID: item.UID},
	}
	gc.recorder.Event(obj, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
		fmt.Sprintf("ownerRef %s does not exist in namespace %q", coordinates(ref), item.Namespace))
}

func uids(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}
