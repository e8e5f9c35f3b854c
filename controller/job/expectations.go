package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

// finalizerExpectations records, per job, the pods whose tracking
// finalizer the controller removed but whose update the informer has not
// delivered yet: such pods are not counted again from a stale cache.
type finalizerExpectations struct {
	mu   sync.Mutex
	uids map[string]sets.Set[string]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{uids: map[string]sets.Set[string]{}}
}

func (f *finalizerExpectations) expect(key string, uids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.uids[key]
	if s == nil {
		s = sets.New[string]()
		f.uids[key] = s
	}
	s.Insert(uids...)
}

func (f *finalizerExpectations) observed(key, uid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.uids[key]; s != nil {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(f.uids, key)
		}
	}
}

// get returns a copy of the pending UIDs of key.
func (f *finalizerExpectations) get(key string) sets.Set[string] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.uids[key].Clone()
}

func (f *finalizerExpectations) delete(key string) {
	f.mu.Lock()
	delete(f.uids, key)
	f.mu.Unlock()
}
