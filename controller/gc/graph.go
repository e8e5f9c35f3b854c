package gc

import (
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectReference identifies an object in the graph: its owner-reference
// coordinates (apiVersion, kind, name, uid) and its namespace ("" for
// cluster-scoped objects).
type objectReference struct {
	APIVersion, Kind, Name string
	UID                    types.UID
	Namespace              string
}

func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// coordinates returns the reference's identity in an owner's terms.
func coordinates(ref metav1.OwnerReference) objectReference {
	return objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

// matchesCoordinates reports whether an owner reference names exactly the
// object r (namespaces aside).
func matchesCoordinates(ref metav1.OwnerReference, r objectReference) bool {
	return ref.UID == r.UID && ref.Name == r.Name && ref.Kind == r.Kind && ref.APIVersion == r.APIVersion
}

func lessReference(a, b objectReference) bool {
	return slices.Compare([]string{a.APIVersion, a.Kind, a.Namespace, a.Name, string(a.UID)},
		[]string{b.APIVersion, b.Kind, b.Namespace, b.Name, string(b.UID)}) < 0
}

// node is an object in the dependency graph. Its identity is corrected
// when a virtual node (an owner only known from references) is observed;
// owners and the flags are written by the graph builder's single
// goroutine and read by the workers, all under mu.
type node struct {
	mu                 sync.RWMutex
	identity           objectReference
	dependents         map[*node]struct{}
	owners             []metav1.OwnerReference
	observed           bool // seen through an informer (false: virtual)
	beingDeleted       bool // deletionTimestamp set
	deletingDependents bool // being deleted with the foregroundDeletion finalizer
}

func newNode(id objectReference, observed bool) *node {
	return &node{identity: id, dependents: map[*node]struct{}{}, observed: observed}
}

func (n *node) String() string { return n.getIdentity().String() }

func (n *node) getIdentity() objectReference {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.identity
}

func (n *node) setIdentity(id objectReference) {
	n.mu.Lock()
	n.identity = id
	n.mu.Unlock()
}

func (n *node) addDependent(d *node) {
	n.mu.Lock()
	n.dependents[d] = struct{}{}
	n.mu.Unlock()
}

func (n *node) removeDependent(d *node) {
	n.mu.Lock()
	delete(n.dependents, d)
	n.mu.Unlock()
}

func (n *node) getDependents() []*node {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	return out
}

func (n *node) dependentsCount() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.dependents)
}

func (n *node) getOwners() []metav1.OwnerReference {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.owners
}

func (n *node) setOwners(owners []metav1.OwnerReference) {
	n.mu.Lock()
	n.owners = owners
	n.mu.Unlock()
}

func (n *node) isObserved() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.observed
}

func (n *node) markObserved() {
	n.mu.Lock()
	n.observed = true
	n.mu.Unlock()
}

func (n *node) isBeingDeleted() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.beingDeleted
}

func (n *node) markBeingDeleted() {
	n.mu.Lock()
	n.beingDeleted = true
	n.mu.Unlock()
}

func (n *node) isDeletingDependents() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.deletingDependents
}

func (n *node) markDeletingDependents() {
	n.mu.Lock()
	n.beingDeleted, n.deletingDependents = true, true
	n.mu.Unlock()
}

// blockingDependents returns the dependents whose reference to n has
// blockOwnerDeletion set: a foreground deletion of n waits for them.
func (n *node) blockingDependents() []*node {
	uid := n.getIdentity().UID
	var out []*node
	for _, d := range n.getDependents() {
		for _, ref := range d.getOwners() {
			if ref.UID == uid && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// graph indexes the nodes by UID.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func newGraph() *graph { return &graph{nodes: map[types.UID]*node{}} }

func (g *graph) read(uid types.UID) *node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nodes[uid]
}

func (g *graph) write(n *node) {
	g.mu.Lock()
	g.nodes[n.getIdentity().UID] = n
	g.mu.Unlock()
}

func (g *graph) delete(uid types.UID) {
	g.mu.Lock()
	delete(g.nodes, uid)
	g.mu.Unlock()
}

func (g *graph) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// referencesDiffs compares two owner reference lists by UID.
func referencesDiffs(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []refPair) {
	oldByUID := map[types.UID]metav1.OwnerReference{}
	for _, r := range old {
		oldByUID[r.UID] = r
	}
	for _, r := range cur {
		o, ok := oldByUID[r.UID]
		if !ok {
			added = append(added, r)
			continue
		}
		if !equalRefs(o, r) {
			changed = append(changed, refPair{old: o, cur: r})
		}
		delete(oldByUID, r.UID)
	}
	for _, r := range old {
		if _, ok := oldByUID[r.UID]; ok {
			removed = append(removed, r)
		}
	}
	return added, removed, changed
}

type refPair struct{ old, cur metav1.OwnerReference }

func equalRefs(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		boolValue(a.Controller) == boolValue(b.Controller) && boolValue(a.BlockOwnerDeletion) == boolValue(b.BlockOwnerDeletion)
}

func boolValue(b *bool) bool { return b != nil && *b }

// partitionDependents splits deps into those whose reference to owner's
// UID matches owner's coordinates (and namespace, for a namespaced owner)
// and those that do not; a dependent can be in both.
func partitionDependents(deps []*node, owner objectReference) (matching, nonmatching []*node) {
	ownerNamespaced := owner.Namespace != ""
	for _, d := range deps {
		match, mismatch := false, false
		if ownerNamespaced && d.getIdentity().Namespace != owner.Namespace {
			mismatch = true
		} else {
			for _, ref := range d.getOwners() {
				if ref.UID != owner.UID {
					continue
				}
				if matchesCoordinates(ref, owner) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, d)
		}
		if mismatch {
			nonmatching = append(nonmatching, d)
		}
	}
	return matching, nonmatching
}

// alternateOwnerIdentity returns another identity the dependents use for
// the owner verified absent: the first one sorting after the absent
// identity, else the first one, else nil. Cycling through the alternates
// in order verifies each in turn.
func alternateOwnerIdentity(deps []*node, absent objectReference) *objectReference {
	clusterScoped := absent.Namespace == ""
	seen := map[objectReference]bool{absent: true}
	var first, following *objectReference
	for _, d := range deps {
		depNS := d.getIdentity().Namespace
		for _, ref := range d.getOwners() {
			if ref.UID != absent.UID {
				continue
			}
			if matchesCoordinates(ref, absent) && (clusterScoped || absent.Namespace == depNS) {
				continue
			}
			alt := coordinates(ref)
			alt.Namespace = depNS
			if clusterScoped && alt.APIVersion == absent.APIVersion && alt.Kind == absent.Kind {
				alt.Namespace = "" // that kind is known to be cluster-scoped
			}
			if seen[alt] {
				continue
			}
			seen[alt] = true
			if first == nil || lessReference(alt, *first) {
				a := alt
				first = &a
			}
			if lessReference(absent, alt) && (following == nil || lessReference(alt, *following)) {
				a := alt
				following = &a
			}
		}
	}
	if following != nil {
		return following
	}
	return first
}
