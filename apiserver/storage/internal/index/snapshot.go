package index

import (
	"fmt"

	"github.com/podkit/podkit/apiserver/storage"
)

// Retain keeps v so that the continue tokens of a paginated list read from
// it can be served from the same snapshot. Retaining a view of a revision
// already kept only refreshes that one.
func (t *Tree) Retain(v *View) {
	now := t.opts.Clock.Now()
	if k, ok := t.snaps[v.rev]; ok {
		k.lastUsed = now
		return
	}
	t.snaps[v.rev] = &kept{view: v, lastUsed: now}
	t.expire()
	for len(t.snaps) > t.opts.MaxSnapshots {
		var oldest uint64
		var oldestAt *kept
		for rev, k := range t.snaps {
			if oldestAt == nil || k.lastUsed.Before(oldestAt.lastUsed) {
				oldest, oldestAt = rev, k
			}
		}
		delete(t.snaps, oldest)
	}
}

// ViewAt returns the snapshot at revision rev for a continue token: a
// retained one, or the current state when nothing was written since rev.
// A snapshot no longer kept fails with storage.ErrContinueExpired; a
// revision the store has not reached with storage.ErrInvalidContinue.
func (t *Tree) ViewAt(rev uint64) (*View, error) {
	t.expire()
	if k, ok := t.snaps[rev]; ok {
		k.lastUsed = t.opts.Clock.Now()
		return k.view, nil
	}
	switch {
	case rev == t.rev:
		return t.View(), nil
	case rev > t.rev:
		return nil, fmt.Errorf("%w: revision %d is ahead of the store (%d)", storage.ErrInvalidContinue, rev, t.rev)
	}
	return nil, fmt.Errorf("%w (revision %d)", storage.ErrContinueExpired, rev)
}

// Snapshots is the number of snapshots retained.
func (t *Tree) Snapshots() int { return len(t.snaps) }

func (t *Tree) expire() {
	now := t.opts.Clock.Now()
	for rev, k := range t.snaps {
		if now.Sub(k.lastUsed) > t.opts.SnapshotTTL {
			delete(t.snaps, rev)
		}
	}
}
