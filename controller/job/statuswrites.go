package job

import (
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/controller"
)

// statusWrites guards syncs against a Job cache older than the
// controller's own last status write.
//
// A sync reads the Job (its status counters and uncountedTerminatedPods)
// and the pods from two informers that lag independently. The tracking
// protocol moves a finished pod from "has the finalizer" to "listed in
// uncountedTerminatedPods" to "counted in succeeded/failed", writing the
// Job's status before each next step; a sync that sees a pod's finalizer
// gone but a Job from before those writes counts the pod nowhere. With
// succeeded short by one the Job looks unfinished, so the sync creates a
// replacement pod for a completion that already happened: the extra
// Pending pod next to a Complete Job (kubernetes/kubernetes#130103
// describes the same race). The finalizer expectations cover the
// opposite lag (a fresh Job, a pod cache still showing the finalizer).
//
// So every status write records the resourceVersion the API server gave
// it, and a sync whose cached Job is older does nothing: the Job's update
// event, when the informer delivers the write, queues the next sync. The
// record expires after controller.ExpectationsTimeout, like the pod
// expectations, so a Job never stays stuck if resourceVersions stop being
// comparable (they are compared as the decimal revisions podkit's stores
// and etcd hand out; anything else is never considered stale).
type statusWrites struct {
	mu     sync.Mutex
	writes map[string]statusWrite
}

type statusWrite struct {
	uid types.UID
	rv  uint64
	at  time.Time
}

func newStatusWrites() *statusWrites { return &statusWrites{writes: map[string]statusWrite{}} }

// record notes the status write the API server answered with written.
func (s *statusWrites) record(key string, written *batchv1.Job, now time.Time) {
	rv, err := strconv.ParseUint(written.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.writes[key]; ok && w.uid == written.UID && w.rv > rv {
		return
	}
	s.writes[key] = statusWrite{uid: written.UID, rv: rv, at: now}
}

// stale reports whether cached predates the last recorded write of its
// Job, and for how long the record still holds. A cache that caught up
// (or a record that expired, or belongs to another Job of the name)
// clears the record.
func (s *statusWrites) stale(key string, cached *batchv1.Job, now time.Time) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.writes[key]
	if !ok {
		return false, 0
	}
	left := controller.ExpectationsTimeout - now.Sub(w.at)
	rv, err := strconv.ParseUint(cached.ResourceVersion, 10, 64)
	if w.uid != cached.UID || left <= 0 || err != nil || rv >= w.rv {
		delete(s.writes, key)
		return false, 0
	}
	return true, left
}

func (s *statusWrites) delete(key string) {
	s.mu.Lock()
	delete(s.writes, key)
	s.mu.Unlock()
}
