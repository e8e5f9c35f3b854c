// Package index is the ordered, in-memory state shared by the podkit
// stores (step 4 of the birth sequence): every key with its current object
// and modification revision in a copy-on-write B-tree, the store's
// revision, and the snapshots that keep paginated lists consistent.
//
// A Tree is not safe for concurrent use; its owner guards it. Views are
// immutable snapshots taken in O(1) (btree.Clone) and may be read by any
// number of goroutines without the owner's lock while the Tree changes.
package index
