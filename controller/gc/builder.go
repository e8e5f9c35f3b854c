package gc

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

// event is an informer notification (or a virtual deletion a worker
// verified with a live read) waiting to be applied to the graph.
type event struct {
	virtual bool
	typ     eventType
	obj     metav1.Object
	oldObj  metav1.Object // updates only
	gvk     schema.GroupVersionKind
}

func (ev *event) identity() objectReference {
	return objectReference{
		APIVersion: ev.gvk.GroupVersion().String(), Kind: ev.gvk.Kind,
		Name: ev.obj.GetName(), UID: ev.obj.GetUID(), Namespace: ev.obj.GetNamespace(),
	}
}

// enqueueVirtualDelete tells the graph builder that a live read found no
// object with id's coordinates and UID.
func (gc *GarbageCollector) enqueueVirtualDelete(id objectReference) {
	gv, _ := schema.ParseGroupVersion(id.APIVersion)
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: id.Name, Namespace: id.Namespace, UID: id.UID}}
	gc.enqueued.Add(1)
	gc.changes.Add(&event{virtual: true, typ: deleteEvent, obj: obj, gvk: gv.WithKind(id.Kind)})
}

// processGraphChange applies one event to the graph. The graph is only
// ever changed here, by one goroutine.
func (gc *GarbageCollector) processGraphChange() bool {
	ev, quit := gc.changes.Get()
	if quit {
		return false
	}
	defer gc.changes.Done(ev)
	gc.applyEvent(ev)
	gc.processed.Add(1)
	return true
}

func (gc *GarbageCollector) applyEvent(ev *event) {
	obj := ev.obj
	existing := gc.graph.read(obj.GetUID())
	if existing != nil && !ev.virtual && !existing.isObserved() {
		// A virtual node's object is seen at last: take its real identity,
		// and re-verify the dependents that named it differently.
		observed := ev.identity()
		if observed != existing.getIdentity() {
			_, invalid := partitionDependents(existing.getDependents(), observed)
			for _, dep := range invalid {
				if observed.Namespace != "" && dep.getIdentity().Namespace != observed.Namespace {
					gc.reportInvalidNamespaceOwnerRef(dep, observed.UID)
				}
				gc.attemptToDelete.Add(dep)
			}
			gc.log.Debug("replacing virtual node", "virtual", existing.getIdentity(), "observed", observed)
			existing.setIdentity(observed)
		}
		existing.markObserved()
	}
	switch {
	case ev.typ != deleteEvent && existing == nil:
		n := newNode(ev.identity(), true)
		n.owners = obj.GetOwnerReferences()
		n.beingDeleted = obj.GetDeletionTimestamp() != nil
		gc.graph.write(n)
		gc.addDependentToOwners(n, n.owners)
		gc.processTransitions(ev.oldObj, obj, n)
	case ev.typ != deleteEvent:
		added, removed, changed := referencesDiffs(existing.getOwners(), obj.GetOwnerReferences())
		if len(added) > 0 || len(removed) > 0 || len(changed) > 0 {
			gc.addUnblockedOwnersToDeleteQueue(removed, changed)
			existing.setOwners(obj.GetOwnerReferences())
			gc.addDependentToOwners(existing, added)
			gc.removeDependentFromOwners(existing, removed)
		}
		if obj.GetDeletionTimestamp() != nil {
			existing.markBeingDeleted()
		}
		gc.processTransitions(ev.oldObj, obj, existing)
	default:
		if existing == nil {
			return
		}
		if ev.virtual && !gc.acceptVirtualDelete(existing, ev.identity()) {
			return
		}
		gc.removeNode(existing)
		deps := existing.getDependents()
		if len(deps) > 0 {
			// The dependents will each verify their owner: save them the reads.
			gc.absent.add(existing.getIdentity())
		}
		for _, dep := range deps {
			gc.attemptToDelete.Add(dep)
		}
		for _, ref := range existing.getOwners() {
			if owner := gc.graph.read(ref.UID); owner != nil && owner.isDeletingDependents() {
				// A foreground owner may have been waiting for this one.
				gc.attemptToDelete.Add(owner)
			}
		}
	}
}

// acceptVirtualDelete decides whether a verified absence of deleted may
// remove existing from the graph. When dependents name the same UID with
// other coordinates (a wrong kind, namespace, …) only the ones that match
// the verified identity are let go; a virtual node moves on to the next
// identity its dependents use.
func (gc *GarbageCollector) acceptVirtualDelete(existing *node, deleted objectReference) bool {
	id := existing.getIdentity()
	if !existing.isObserved() {
		matching, nonmatching := partitionDependents(existing.getDependents(), deleted)
		if len(nonmatching) == 0 {
			return true
		}
		if len(matching) > 0 {
			gc.absent.add(deleted)
			for _, dep := range matching {
				gc.attemptToDelete.Add(dep)
			}
		}
		if id == deleted {
			if alt := alternateOwnerIdentity(nonmatching, deleted); alt != nil {
				existing.setIdentity(*alt)
				gc.attemptToDelete.AddRateLimited(existing)
			}
		}
		return false
	}
	if id == deleted {
		return true
	}
	// The real object exists; only references with other coordinates are
	// dangling.
	matching, _ := partitionDependents(existing.getDependents(), deleted)
	if len(matching) > 0 {
		gc.absent.add(deleted)
		for _, dep := range matching {
			gc.attemptToDelete.Add(dep)
		}
	}
	return false
}

// addDependentToOwners links n under each owner, creating virtual nodes
// for owners not seen yet (verified by a worker), and queues n for
// verification when a reference looks wrong.
func (gc *GarbageCollector) addDependentToOwners(n *node, owners []metav1.OwnerReference) {
	id := n.getIdentity()
	suspicious := false
	for _, ref := range owners {
		owner := gc.graph.read(ref.UID)
		if owner == nil {
			owner = newNode(objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Namespace: id.Namespace}, false)
			gc.graph.write(owner)
			owner.addDependent(n)
			gc.attemptToDelete.Add(owner)
			// A cluster-scoped dependent may name a namespaced kind, which
			// the owner's verification cannot resolve: verify it directly.
			suspicious = suspicious || id.Namespace == ""
			continue
		}
		owner.addDependent(n)
		oid := owner.getIdentity()
		ownerNamespaced := oid.Namespace != ""
		switch {
		case ownerNamespaced && oid.Namespace != id.Namespace:
			if owner.isObserved() {
				gc.reportInvalidNamespaceOwnerRef(n, ref.UID)
			}
			suspicious = true
		case !matchesCoordinates(ref, oid):
			suspicious = true
		case !ownerNamespaced && oid.Namespace != id.Namespace && !owner.isObserved():
			// A virtual cluster-scoped owner seen from another namespace
			// may be a namespaced kind named wrongly.
			suspicious = true
		}
	}
	if suspicious {
		gc.attemptToDelete.Add(n)
	}
}

func (gc *GarbageCollector) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, ref := range owners {
		if owner := gc.graph.read(ref.UID); owner != nil {
			owner.removeDependent(n)
		}
	}
}

func (gc *GarbageCollector) removeNode(n *node) {
	gc.graph.delete(n.getIdentity().UID)
	gc.removeDependentFromOwners(n, n.getOwners())
}

// addUnblockedOwnersToDeleteQueue wakes owners a dependent stopped
// blocking (reference removed, or blockOwnerDeletion turned off): a
// foreground deletion may be able to finish.
func (gc *GarbageCollector) addUnblockedOwnersToDeleteQueue(removed []metav1.OwnerReference, changed []refPair) {
	for _, ref := range removed {
		if boolValue(ref.BlockOwnerDeletion) {
			if owner := gc.graph.read(ref.UID); owner != nil {
				gc.attemptToDelete.Add(owner)
			}
		}
	}
	for _, c := range changed {
		if boolValue(c.old.BlockOwnerDeletion) && !boolValue(c.cur.BlockOwnerDeletion) {
			if owner := gc.graph.read(c.cur.UID); owner != nil {
				gc.attemptToDelete.Add(owner)
			}
		}
	}
}

// processTransitions starts an orphan or foreground deletion the first
// time the object is seen marked for one (the first event after a restart
// counts: old is nil then).
func (gc *GarbageCollector) processTransitions(old, cur metav1.Object, n *node) {
	if startsDeletionWith(old, cur, metav1.FinalizerOrphanDependents) {
		gc.log.Debug("orphaning dependents", "owner", n.getIdentity())
		gc.attemptToOrphan.Add(n)
		return
	}
	if startsDeletionWith(old, cur, metav1.FinalizerDeleteDependents) {
		gc.log.Debug("deleting dependents in the foreground", "owner", n.getIdentity())
		n.markDeletingDependents()
		for _, dep := range n.getDependents() {
			gc.attemptToDelete.Add(dep)
		}
		gc.attemptToDelete.Add(n)
	}
}

func startsDeletionWith(old, cur metav1.Object, finalizer string) bool {
	if cur.GetDeletionTimestamp() == nil || !hasFinalizer(cur, finalizer) {
		return false
	}
	return old == nil || old.GetDeletionTimestamp() == nil || !hasFinalizer(old, finalizer)
}

func hasFinalizer(obj metav1.Object, finalizer string) bool {
	for _, f := range obj.GetFinalizers() {
		if f == finalizer {
			return true
		}
	}
	return false
}

// reportInvalidNamespaceOwnerRef records a warning on a dependent whose
// owner reference points to another namespace.
func (gc *GarbageCollector) reportInvalidNamespaceOwnerRef(n *node, ownerUID types.UID) {
	id := n.getIdentity()
	var ref metav1.OwnerReference
	for _, r := range n.getOwners() {
		if r.UID == ownerUID {
			ref = r
			break
		}
	}
	obj := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: id.APIVersion, Kind: id.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: id.Name, Namespace: id.Namespace, UID: id.UID},
	}
	gc.recorder.Event(obj, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
		fmt.Sprintf("ownerRef %s does not exist in namespace %q",
			objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}, id.Namespace))
}
