// Package watchcache is the in-memory watch history and broadcaster behind
// the podkit stores: step 4 of the birth sequence, the part of "persist"
// that tells the scheduler, the kubelet, the controllers and kubectl get -w
// that an object was written.
//
// A store appends one Event per write, in revision order, after the write
// is durable. The Cache keeps the most recent events in a ring (by count,
// and optionally by age) and serves Watch with the etcd-shaped semantics of
// storage.Store.Watch:
//
//   - a watch from revision R delivers every event under its prefix with a
//     revision above R, history first and then live, in revision order,
//     never duplicating or skipping one;
//   - R older than the window of history kept fails with storage.ErrGone
//     (the window starts at the revision the cache was created with, so a
//     watch from the current revision always works, even right after a
//     restart); R above the current revision fails with
//     storage.ErrTooLargeResourceVersion; R = 0 means "from now";
//   - a predicate turns a change into ADDED, MODIFIED or DELETED depending
//     on whether the object enters, stays in or leaves the selection;
//   - every watcher has its own bounded buffer; a watcher whose buffer
//     is full is waited for only within a small dispatch budget that
//     refills over time (as kube-apiserver's cacher does), so a reader
//     descheduled during a burst of writes catches up instead of being
//     dropped and relisting, then dropped (its channel closed, a warning
//     logged, a counter incremented), so a slow reader never holds up
//     writers or other readers for long;
//   - watchers that ask for bookmarks get periodic watch.Bookmark events
//     carrying the revision they have caught up to.
//
// Objects in events are shared by every watcher and by the store: receivers
// must treat them as read-only and deep-copy before changing anything.
//
// A watch is read through ResultChan (a goroutine per watch moves events
// from its buffer to the channel) or, by a consumer that fans out to many
// clients like the API server's watch handler, through Batcher.NextBatch,
// which takes the events ready in the buffer directly: one goroutine
// hand-off per event and watcher instead of two, and a batch per wake-up
// that the caller can write with one flush.
package watchcache
