package index

import (
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// Item is one key's current state. Obj is shared and read-only: the store
// copies it in before it is stored and out before it is returned.
type Item struct {
	Key string
	Obj runtime.Object
	// Rev is the revision of the write that produced Obj.
	Rev uint64
}

func lessItem(a, b *Item) bool { return a.Key < b.Key }

// Defaults for snapshots kept for continue tokens.
const (
	DefaultSnapshotTTL  = 5 * time.Minute
	DefaultMaxSnapshots = 64
	degree              = 32
)

// Options of a Tree.
type Options struct {
	// SnapshotTTL is how long after its last use the snapshot behind a
	// continue token is kept (default 5m, like etcd's compaction interval
	// in Kubernetes).
	SnapshotTTL time.Duration
	// MaxSnapshots caps the snapshots kept; the least recently used go
	// first (default 64).
	MaxSnapshots int
	// Clock measures snapshot ages (default: the real clock).
	Clock clock.PassiveClock
}

// Tree is the ordered state of a store at its current revision. Point
// lookups (every write reads the key's current item, twice) go through a
// hash map kept beside the B-tree: with a hundred thousand keys sharing
// long prefixes ("/registry/pods/default/web-..."), a descent compares a
// dozen strings and misses the cache at every level, a map lookup hashes
// the key once. The B-tree keeps the order and the O(1) snapshots.
type Tree struct {
	bt    *btree.BTreeG[*Item]
	byKey map[string]*Item
	rev   uint64
	opts  Options
	snaps map[uint64]*kept
}

type kept struct {
	view     *View
	lastUsed time.Time
}

// New returns an empty Tree at revision rev.
func New(rev uint64, opts Options) *Tree {
	if opts.SnapshotTTL <= 0 {
		opts.SnapshotTTL = DefaultSnapshotTTL
	}
	if opts.MaxSnapshots <= 0 {
		opts.MaxSnapshots = DefaultMaxSnapshots
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Tree{
		bt:    btree.NewG(degree, lessItem),
		byKey: make(map[string]*Item),
		rev:   rev,
		opts:  opts,
		snaps: make(map[uint64]*kept),
	}
}

// Rev is the revision of the latest write applied.
func (t *Tree) Rev() uint64 { return t.rev }

// SetRev records the revision of the latest write applied.
func (t *Tree) SetRev(rev uint64) { t.rev = rev }

// Len is the number of keys.
func (t *Tree) Len() int { return t.bt.Len() }

// Get returns the item under key.
func (t *Tree) Get(key string) (*Item, bool) {
	it, ok := t.byKey[key]
	return it, ok
}

// Put stores it, replacing what its key held.
func (t *Tree) Put(it *Item) {
	t.bt.ReplaceOrInsert(it)
	t.byKey[it.Key] = it
}

// Delete removes key.
func (t *Tree) Delete(key string) {
	t.bt.Delete(&Item{Key: key})
	delete(t.byKey, key)
}

// View returns an immutable snapshot of the current state, in O(1).
func (t *Tree) View() *View {
	return &View{bt: t.bt.Clone(), rev: t.rev}
}
