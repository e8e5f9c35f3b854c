// Package namespace is the namespace controller of the controller manager:
// it empties a namespace that is being deleted and then releases it.
//
// Deleting a namespace only marks it: the API server sets its
// deletionTimestamp and phase Terminating and keeps it while
// spec.finalizers holds "kubernetes". This controller watches namespaces;
// for a terminating one it
//
//  1. discovers every namespaced resource that can be listed and deleted
//     (discovery, preferred versions: whatever the API server serves, not a
//     fixed list);
//  2. deletes each resource's objects in the namespace with one
//     DELETE-collection call (propagationPolicy Background, so the garbage
//     collector never adds the orphan finalizer), falling back to listing
//     and deleting one by one when the collection verb is missing;
//  3. lists again and records what remains in the namespace's status
//     conditions, exactly like Kubernetes (NamespaceDeletionDiscoveryFailure,
//     NamespaceDeletionGroupVersionParsingFailure,
//     NamespaceDeletionContentFailure, NamespaceContentRemaining,
//     NamespaceFinalizersRemaining, each False with its "ok" reason when
//     nothing is wrong);
//  4. while content remains it requeues the namespace after an estimate:
//     the longest terminationGracePeriodSeconds of its live pods, or a
//     default for objects held by finalizers; half of it plus a base delay,
//     as Kubernetes does;
//  5. once nothing remains, removes "kubernetes" from spec.finalizers
//     through the /finalize subresource, upon which the API server deletes
//     the namespace.
//
// Objects are listed and deleted with the metadata client
// (PartialObjectMetadata), so the controller needs no Go types for the
// resources it removes. Every step re-reads the live namespace, so a
// restarted controller simply starts over.
package namespace
