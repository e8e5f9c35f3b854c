package index

import (
	"strings"

	"github.com/podkit/podkit/apiserver/storage"
)

// Lists without a snapshot. A View clones the B-tree in O(1), but the
// clone makes the tree copy-on-write: every later write copies the nodes
// on its path before changing them, once per node per clone. Admission
// lists a namespace's LimitRanges and ResourceQuotas for every pod create;
// cloning for each of those lists, a handful of items that need no
// continue token, made the writes between them copy the whole path of
// the pods' keys every time. A small list reads the live tree instead,
// under the lock that keeps writes out, and gives up on a prefix holding
// more than a few items (those keep the snapshot, whose reading happens
// after the lock is released).

// DefaultLiveListMax is the most items under a prefix that a list reads
// from the live tree (see Tree.Collect).
const DefaultLiveListMax = 256

// Collect returns the items under prefix in key order, with the revision
// they reflect, when there are at most max of them; ok is false (and
// items nil) when there are more. It only reads the tree: the caller
// holds the lock that keeps writes (and Clone, which changes the tree's
// copy-on-write state) out while it runs, and may release it before it
// lists the items with ListItems (items are immutable).
func (t *Tree) Collect(prefix string, max int) (items []*Item, rev uint64, ok bool) {
	// Count first, without allocating: a prefix holding more than max
	// items (all the pods) costs a short walk, not a growing slice.
	n := 0
	t.bt.AscendGreaterOrEqual(&Item{Key: prefix}, func(it *Item) bool {
		if !strings.HasPrefix(it.Key, prefix) {
			return false
		}
		n++
		return n <= max
	})
	if n > max {
		return nil, 0, false
	}
	items = make([]*Item, 0, n)
	t.bt.AscendGreaterOrEqual(&Item{Key: prefix}, func(it *Item) bool {
		if len(items) == n || !strings.HasPrefix(it.Key, prefix) {
			return false
		}
		items = append(items, it)
		return true
	})
	return items, t.rev, true
}

// ListItems is View.List of the first page, read from items (every item
// under prefix at revision rev, in key order, as Collect returns them)
// instead of a snapshot: the same items, resourceVersion, continue token
// and remaining count. A caller that needs no continue token passes items
// that fit opts.Limit.
func ListItems(items []*Item, rev uint64, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	return list(func(fn func(*Item) bool) {
		for _, it := range items {
			if !fn(it) {
				return
			}
		}
	}, rev, prefix, opts)
}
