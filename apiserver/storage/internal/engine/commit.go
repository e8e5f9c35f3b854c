package engine

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/index"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// errRetry: the key changed since the write was prepared; prepare it again.
var errRetry = errors.New("key changed since read")

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

// request is one write on its way to commit.
type request struct {
	kind   opKind
	key    string
	obj    runtime.Object // create, update: the engine's copy to store
	data   []byte         // create, update: obj's encoding, when the backend gave one
	expect uint64         // update, delete: the revision it was based on

	out  runtime.Object // stored (or deleted) object, shared
	err  error
	done chan struct{}
}

// staged is a checked request with its revision assigned.
type staged struct {
	req  *request
	item *index.Item // nil: delete
	ev   watchcache.Event
}

// check validates r against cur, the key's state (nil when absent).
func check(r *request, cur *index.Item) error {
	switch r.kind {
	case opCreate:
		if cur != nil {
			return fmt.Errorf("key %q: %w", r.key, storage.ErrExists)
		}
	default:
		if cur == nil {
			return fmt.Errorf("key %q: %w", r.key, storage.ErrNotFound)
		}
		if cur.Rev != r.expect {
			return errRetry
		}
	}
	return nil
}

// build stamps revision rev on a checked request.
func build(r *request, cur *index.Item, rev uint64) (staged, error) {
	s := staged{req: r}
	switch r.kind {
	case opCreate, opUpdate:
		if err := storage.SetRevision(r.obj, rev); err != nil {
			return s, fmt.Errorf("key %q: %w", r.key, err)
		}
		s.item = &index.Item{Key: r.key, Obj: r.obj, Rev: rev}
		s.ev = watchcache.Event{Type: watch.Added, Key: r.key, Object: r.obj, Revision: rev}
		if r.kind == opUpdate {
			s.ev.Type, s.ev.PrevObject = watch.Modified, cur.Obj
		}
		r.out = r.obj
	case opDelete:
		gone := cur.Obj.DeepCopyObject()
		if err := storage.SetRevision(gone, rev); err != nil {
			return s, fmt.Errorf("key %q: %w", r.key, err)
		}
		s.ev = watchcache.Event{Type: watch.Deleted, Key: r.key, Object: gone, PrevObject: cur.Obj, Revision: rev}
		r.out = gone
	}
	return s, nil
}

// apply makes staged writes visible and emits their events, in revision
// order. The caller holds e.mu for writing.
func (e *Engine) apply(writes []staged, rev uint64) {
	var one [1]watchcache.Event // an inline commit's: no allocation
	events := one[:0]
	if len(writes) > 1 {
		events = make([]watchcache.Event, 0, len(writes))
	}
	for _, s := range writes {
		if s.item == nil {
			e.tree.Delete(s.req.key)
		} else {
			e.tree.Put(s.item)
		}
		events = append(events, s.ev)
	}
	e.tree.SetRev(rev)
	if err := e.cache.Append(events...); err != nil {
		// Only a broken invariant gets here: the writes stand, watchers miss them.
		e.log.Error("storage: watch cache rejected events", "revision", rev, "err", err)
	}
}

// commit runs r inline (no Persister) or through the group-commit loop and
// returns the stored object. Once handed to the loop a write is waited for
// regardless of the caller's context: its outcome must be known.
func (e *Engine) commit(r *request) (runtime.Object, error) {
	if e.persist == nil {
		return e.commitInline(r)
	}
	r.done = make(chan struct{})
	select {
	case e.reqs <- r:
	case <-e.stopLoop:
		return nil, storage.ErrClosed
	}
	select {
	case <-r.done:
	case <-e.loopDone:
		select {
		case <-r.done:
		default:
			return nil, storage.ErrClosed // queued after the loop's last drain
		}
	}
	return r.out, r.err
}

func (e *Engine) commitInline(r *request) (runtime.Object, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return nil, storage.ErrClosed
	}
	cur, _ := e.tree.Get(r.key)
	if err := check(r, cur); err != nil {
		return nil, err
	}
	rev := e.tree.Rev() + 1
	s, err := build(r, cur, rev)
	if err != nil {
		return nil, err
	}
	e.apply([]staged{s}, rev)
	return r.out, nil
}

// loop is the group commit: it takes every write queued (up to maxBatch),
// checks them in arrival order against the state plus the batch's own
// earlier writes, assigns consecutive revisions, persists them in one
// Persist call and only then publishes state and events.
func (e *Engine) loop() {
	defer close(e.loopDone)
	for {
		select {
		case <-e.stopLoop: // closing wins over queued writes
			e.failQueued()
			return
		default:
		}
		var batch []*request
		select {
		case r := <-e.reqs:
			batch = append(batch, r)
		case <-e.stopLoop:
			e.failQueued()
			return
		}
	fill:
		for len(batch) < e.maxBatch {
			select {
			case r := <-e.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		e.commitBatch(batch)
	}
}

func (e *Engine) failQueued() {
	for {
		select {
		case r := <-e.reqs:
			r.err = storage.ErrClosed
			close(r.done)
		default:
			return
		}
	}
}

func (e *Engine) commitBatch(batch []*request) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	// Only this goroutine writes the tree, so the state read here stays
	// valid until apply below.
	e.mu.RLock()
	rev := e.tree.Rev()
	overlay := make(map[string]*index.Item)
	var writes []staged
	for _, r := range batch {
		cur, inBatch := overlay[r.key]
		if !inBatch {
			cur, _ = e.tree.Get(r.key)
		}
		if r.err = check(r, cur); r.err != nil {
			continue
		}
		s, err := build(r, cur, rev+1)
		if err != nil {
			r.err = err
			continue
		}
		rev++
		overlay[r.key] = s.item
		writes = append(writes, s)
	}
	e.mu.RUnlock()
	if len(writes) == 0 {
		return
	}
	changes := make([]Change, len(writes))
	for i, s := range writes {
		changes[i].Key = s.req.key
		changes[i].Rev = s.ev.Revision
		if s.item != nil {
			changes[i].Obj = s.item.Obj
			changes[i].Data = s.req.data
		}
	}
	if err := e.persist.Persist(changes, rev); err != nil {
		for _, s := range writes {
			s.req.out, s.req.err = nil, fmt.Errorf("key %q: persisting: %w", s.req.key, err)
		}
		return
	}
	e.mu.Lock()
	e.apply(writes, rev)
	e.mu.Unlock()
}
