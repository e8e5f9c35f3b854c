// Package engine implements storage.Store once for the podkit backends
// (step 4 of the birth sequence): the ordered state (index), the watch
// history (watchcache), the compare-and-swap write protocol and the
// sequencing of revisions. A backend supplies only how writes become
// durable (a Persister) and how objects look once stored (Canonical):
//
//   - with no Persister (the memory backend) a write commits inline under
//     the engine's lock;
//   - with a Persister (the bolt backend) writes go through a group-commit
//     loop: concurrent writers share one Persist call (one transaction, one
//     fsync), revisions are assigned in commit order, and the new state and
//     its watch events become visible only after Persist succeeded, in
//     revision order.
package engine
