package watchcache

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// watcherSet holds a Cache's open watchers. Those without an index
// (storage.WatchOptions.Index) are visited by every event under their
// prefix; those with one are grouped by index name and value, so an event
// visits only the watchers of its object's value and of its previous
// object's value. A hundred kubelets each watching spec.nodeName=<node>
// then cost an event one map lookup instead of a hundred buffer sends and
// predicate runs.
//
// The watchers without an index are held by prefix (prefixSet): an event
// looks its key's prefixes up instead of testing every such watcher, of
// every resource, against its key.
type watcherSet struct {
	plain   prefixSet
	indexes map[string]*watcherIndex
	n       int
}

// watcherIndex is the watchers of one index, by value.
type watcherIndex struct {
	fn      func(runtime.Object) string
	byValue map[string]map[*watcher]struct{}
}

func newWatcherSet() watcherSet {
	return watcherSet{plain: prefixSet{byPrefix: map[string]map[*watcher]struct{}{}}, indexes: map[string]*watcherIndex{}}
}

func (s *watcherSet) len() int { return s.n }

func (s *watcherSet) add(w *watcher) {
	s.n++
	if w.index == nil {
		s.plain.add(w)
		return
	}
	ix := s.indexes[w.index.Name]
	if ix == nil {
		ix = &watcherIndex{fn: w.index.Func, byValue: map[string]map[*watcher]struct{}{}}
		s.indexes[w.index.Name] = ix
	}
	ws := ix.byValue[w.index.Value]
	if ws == nil {
		ws = map[*watcher]struct{}{}
		ix.byValue[w.index.Value] = ws
	}
	ws[w] = struct{}{}
}

// remove forgets w; it reports whether w was there.
func (s *watcherSet) remove(w *watcher) bool {
	if w.index == nil {
		if !s.plain.remove(w) {
			return false
		}
		s.n--
		return true
	}
	ix := s.indexes[w.index.Name]
	if ix == nil {
		return false
	}
	ws := ix.byValue[w.index.Value]
	if _, ok := ws[w]; !ok {
		return false
	}
	delete(ws, w)
	s.n--
	if len(ws) == 0 {
		delete(ix.byValue, w.index.Value)
		if len(ix.byValue) == 0 {
			delete(s.indexes, w.index.Name)
		}
	}
	return true
}

// visit calls f for every watcher ev may concern: each watcher whose prefix
// ev's key falls under and, for an indexed watcher, whose value is that of
// ev's object or previous object. f may remove the watcher it is given.
func (s *watcherSet) visit(ev *Event, f func(w *watcher)) {
	s.plain.visit(ev.Key, f)
	for _, ix := range s.indexes {
		v := ix.fn(ev.Object)
		visitUnder(ix.byValue[v], ev.Key, f)
		if ev.PrevObject != nil {
			if pv := ix.fn(ev.PrevObject); pv != v {
				visitUnder(ix.byValue[pv], ev.Key, f)
			}
		}
	}
}

// visitUnder calls f for the watchers of ws whose prefix key falls under.
func visitUnder(ws map[*watcher]struct{}, key string, f func(w *watcher)) {
	for w := range ws {
		if strings.HasPrefix(key, w.prefix) {
			f(w)
		}
	}
}

// prefixSet holds watchers by their key prefix. An event visits the
// watchers of each prefix its key starts with: one map lookup per distinct
// prefix length (a handful: "/registry/pods/", "/registry/pods/<ns>/",
// ...) rather than a prefix test for each of the hundreds of watchers a
// cluster's informers open on every resource.
type prefixSet struct {
	byPrefix map[string]map[*watcher]struct{}
	// lengths are the distinct lengths of byPrefix's keys, ascending. A
	// change replaces the slice, never edits it: a visit ranging over it
	// may remove watchers.
	lengths []int
}

func (p *prefixSet) add(w *watcher) {
	ws := p.byPrefix[w.prefix]
	if ws == nil {
		ws = map[*watcher]struct{}{}
		p.byPrefix[w.prefix] = ws
		p.relength()
	}
	ws[w] = struct{}{}
}

// remove forgets w; it reports whether w was there.
func (p *prefixSet) remove(w *watcher) bool {
	ws := p.byPrefix[w.prefix]
	if _, ok := ws[w]; !ok {
		return false
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(p.byPrefix, w.prefix)
		p.relength()
	}
	return true
}

func (p *prefixSet) relength() {
	lengths := make([]int, 0, len(p.byPrefix))
	for prefix := range p.byPrefix {
		lengths = append(lengths, len(prefix))
	}
	slices.Sort(lengths)
	p.lengths = slices.Compact(lengths)
}

// visit calls f for the watchers whose prefix key falls under; f may
// remove the watcher it is given.
func (p *prefixSet) visit(key string, f func(w *watcher)) {
	for _, n := range p.lengths {
		if n > len(key) {
			return
		}
		for w := range p.byPrefix[key[:n]] {
			f(w)
		}
	}
}

// indexMatches reports whether an event may concern a watch with index ix:
// its object or previous object has the value the watch requires.
func indexMatches(ix *storage.WatchIndex, e *Event) bool {
	if ix == nil {
		return true
	}
	if ix.Func(e.Object) == ix.Value {
		return true
	}
	return e.PrevObject != nil && ix.Func(e.PrevObject) == ix.Value
}
