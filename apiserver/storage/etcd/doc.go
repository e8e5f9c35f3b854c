// Package etcd is the storage.Store backed by an etcd v3 cluster: step 4 of
// the birth sequence for clusters that outgrow one machine, where several
// API servers share one source of truth, as Kubernetes does.
//
// Layout and semantics follow kube-apiserver's etcd3 storage so that an
// operator's etcd knowledge carries over:
//
//   - an object lives under <prefix>/<resource>/<namespace>/<name>
//     (prefix /registry by default): the storage key with its leading
//     "/registry" replaced by the configured prefix;
//   - values are the protobuf (or JSON) encoding of the storage codec,
//     optionally passed through a Transformer (encryption at rest), without
//     a resourceVersion: an object's resourceVersion is the etcd mod
//     revision of its key, and a list's is the revision it was read at;
//   - writes are transactions comparing the key's mod revision with the one
//     read (create: the key must not exist), so concurrent writers through
//     any number of API servers never lose an update; Update and Delete
//     re-read and retry when another writer won, as GuaranteedUpdate does;
//   - paginated lists read every page at the first page's revision; a
//     compacted revision makes the continue token expire (410 Gone);
//   - one etcd watch per store, from the revision the store opened at with
//     progress notifications, feeds a watchcache.Cache that serves every
//     watcher (history, predicates, bookmarks, dropping of slow readers).
//     The store reads its own writes: a watch starts after every write this
//     store acknowledged, and one starting at a revision the cache has not
//     reached yet (a write through another API server) skips the events up
//     to that revision. If etcd compacted past the watch's position (it was
//     disconnected too long), the cache restarts at the current revision
//     and watchers are ended, to resume or re-list like informers do;
//   - an optional compactor compacts etcd periodically, coordinated
//     through etcd so that only one of several API servers compacts per
//     interval (kube-apiserver's compact_rev_key scheme).
//
// TLS client certificates and several endpoints are set in Config; the
// client fails over between endpoints by itself.
package etcd
