package watchcache

import (
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
type watcherSet struct {
	plain   map[*watcher]struct{}
	indexes map[string]*watcherIndex
	n       int
}

// watcherIndex is the watchers of one index, by value.
type watcherIndex struct {
	fn      func(runtime.Object) string
	byValue map[string]map[*watcher]struct{}
}

func newWatcherSet() watcherSet {
	return watcherSet{plain: map[*watcher]struct{}{}, indexes: map[string]*watcherIndex{}}
}

func (s *watcherSet) len() int { return s.n }

func (s *watcherSet) add(w *watcher) {
	s.n++
	if w.index == nil {
		s.plain[w] = struct{}{}
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
		if _, ok := s.plain[w]; !ok {
			return false
		}
		delete(s.plain, w)
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
	visitUnder(s.plain, ev.Key, f)
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
