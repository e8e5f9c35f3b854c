// Package gc is the garbage collector of the controller manager: it
// deletes objects whose owners are gone and carries out the three deletion
// propagation policies through ownerReferences — Background, Foreground
// and Orphan.
//
// # Place in the system
//
// The API server only records intent: DELETE with propagationPolicy
// Foreground adds the foregroundDeletion finalizer, Orphan (or
// orphanDependents) adds the orphan finalizer, and the object stays,
// marked with a deletionTimestamp, until the finalizers are gone;
// Background (the default) removes the object at once. Everything else is
// done here: when `kubectl delete deploy web` removes a Deployment, this
// controller deletes its ReplicaSets and then their Pods.
//
// # Design (Kubernetes' garbage collector, re-derived)
//
// Monitors. Discovery lists every resource that can be listed, watched and
// deleted (preferred versions; events are ignored); one informer per
// resource feeds add/update/delete events to the graph builder. Resources
// the shared typed informer factory knows (all of podkit's built-in ones)
// reuse the informer the other controllers already run — one watch per
// resource for the whole controller manager, as Kubernetes' informer
// factory does — and any other resource gets a metadata informer of its
// own (WithMetadataInformersOnly forces metadata informers everywhere).
// Discovery is re-read every resync period, so resources that appear are
// monitored too.
//
// Graph. A single goroutine applies the events to a graph of nodes keyed
// by UID; each node knows its owner references and its dependents. An
// owner referenced before it is seen becomes a "virtual" node that a
// worker verifies with a live read. The first time an object is seen
// marked for deletion with the orphan finalizer it is queued for
// orphaning; with the foregroundDeletion finalizer it is marked
// "deleting dependents" and its dependents are queued for deletion.
// Removing a node queues its dependents (their owner may now be absent)
// and any owner waiting in the foreground.
//
// attemptToDelete. A worker never trusts the graph alone: it reads the
// item live, classifies each owner reference by reading the owner live
// (solid, dangling — absent or another UID under that name, or in another
// namespace — or waiting — deleting in the foreground), and then
//   - keeps an item that has a solid owner, patching away its references
//     to dangling and waiting owners;
//   - deletes in the foreground an item whose owner waits for it and which
//     has dependents of its own (unblocking its references first when a
//     dependent is itself deleting in the foreground, to break cycles);
//   - otherwise deletes the item (Background, or the policy its own
//     finalizers ask for).
//
// Deletes carry UID and resourceVersion preconditions, so an object that
// changed since it was verified is re-verified rather than deleted. A
// missing item becomes a virtual delete event for the graph builder.
// Owners verified absent are remembered in a small cache. A cluster-scoped
// object naming a namespaced owner is reported (OwnerRefInvalidNamespace)
// and left alone, as in Kubernetes.
//
// Foreground. An owner deleting its dependents loses its
// foregroundDeletion finalizer (read-modify-write with the live
// resourceVersion) once no dependent with blockOwnerDeletion remains in
// the graph; dependents without it are deleted but not waited for.
//
// Orphan. The owner's dependents lose their reference to it (same
// read-modify-write), then the orphan finalizer is removed.
//
// Restarts. Everything is derived from the informers' initial lists (a
// "first seen" event counts as a transition), and workers start only once
// every monitor has synced and the graph has taken in the initial events,
// so a foreground owner is never finalized before its dependents are
// known. Failed items are retried with backoff indefinitely: there is no
// periodic resync to bring them back.
//
// The live reads, patches and deletes use client-go's metadata client
// (PartialObjectMetadata). Sub-package metaclient adapts a dynamic client
// to that interface for servers that cannot serve the metadata
// representation.
package gc
