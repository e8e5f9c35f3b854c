// Package storage is step 4 of the birth sequence: where an admitted object is
// persisted and from where every watcher (scheduler, kubelet, controllers,
// kubectl get -w) learns of it.
//
// The Store contract is etcd-shaped so that memory, bbolt (the embedded
// default) and etcd backends are interchangeable:
//
//   - keys are paths, /registry/<resource>/<namespace>/<name> (see Key);
//   - one cluster-wide, monotonically increasing resourceVersion (a revision)
//     is stamped on every object written, and on the object carried by a
//     DELETED event;
//   - writes are compare-and-swap: Update re-runs its tryUpdate function on
//     the latest object, and an object whose resourceVersion is set and stale
//     on Update fails with ErrConflict;
//   - watches start from a resourceVersion and replay history after it, or
//     fail with ErrGone when that history is no longer kept;
//   - a watcher too slow to keep up is dropped (its channel closed), never
//     blocking writers or other watchers.
//
// Errors wrap the sentinels below; use errors.Is. The conformance suite in
// storagetest checks all of this for any implementation.
//
// Around the contract: Revision and SetRevision read and stamp the
// resourceVersion; EncodeContinue and DecodeContinue make the opaque
// continue tokens, in Kubernetes' format, for any backend. Package
// watchcache is the watch history and broadcaster the backends share;
// memory and bolt are the built-in backends.
package storage
