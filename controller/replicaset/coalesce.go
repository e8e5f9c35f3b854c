package replicaset

import (
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/controller"
)

// Three savings for a ReplicaSet whose thousands of pods change all at
// once (a scale-up of 10,000 replicas), where every sync claims and counts
// every pod, and pod changes arriving every millisecond would otherwise
// keep one worker syncing back to back for the whole scale-up (taking a
// core from the pods' births):
//
//   - while the ReplicaSet still expects creations or deletions, a pod
//     change queues its sync after DefaultPendingSyncDelay instead of at
//     once: such a sync can only write status (manageReplicas waits for
//     the expectations), so the status trails by at most the delay, and
//     changes in between share one sync. The change that meets the
//     expectations (the last creation or deletion observed), and every
//     change once they are met or expired, queues a sync at once as
//     before, so creating and deleting pods is never delayed, nor is a
//     rollout waiting for readiness.
//   - a pod update that changes nothing a sync reads of it (its binding,
//     container statuses before readiness) does not queue a sync while the
//     ReplicaSet still expects creations or deletions: such a sync could
//     only write the status it would compute without that update. The
//     updates that matter (labels, owner, deletion, phase, readiness) and
//     every update once expectations are met (or expired) queue one as
//     before.
//   - a sync that starts before the informer has delivered the
//     ReplicaSet's own last status write starts from the object that write
//     returned, instead of writing over a stale copy, failing with a
//     conflict and reading it again.

// DefaultPendingSyncDelay is how long a pod change waits to sync its
// ReplicaSet while creations or deletions are still expected.
const DefaultPendingSyncDelay = 500 * time.Millisecond

// queuePodChange queues the sync of key for a pod change: after the
// pending delay while expectations are pending, else at once.
func (rc *Controller) queuePodChange(key string) {
	if rc.pendingDelay > 0 && !rc.expectations.Satisfied(key) {
		rc.queue.AddAfter(key, rc.pendingDelay)
		return
	}
	rc.queue.Add(key)
}

// unchangedForSync reports whether cur differs from old only in what a
// sync does not read: its labels, controller reference, deletion, phase
// and Ready condition (status and transition time) are the same.
func unchangedForSync(old, cur *corev1.Pod) bool {
	if old.DeletionTimestamp != nil || cur.DeletionTimestamp != nil || old.Status.Phase != cur.Status.Phase {
		return false
	}
	oldReady, curReady := controller.PodReadyCondition(old), controller.PodReadyCondition(cur)
	if (oldReady == nil) != (curReady == nil) {
		return false
	}
	if oldReady != nil && (oldReady.Status != curReady.Status || !oldReady.LastTransitionTime.Equal(&curReady.LastTransitionTime)) {
		return false
	}
	return true
}

// lastWrites remembers, per ReplicaSet key, the object its last status
// write returned and the resourceVersions that write and the writes
// before it (each started from the previous one's result) replaced.
type lastWrites struct {
	mu    sync.Mutex
	byKey map[string]lastWrite
}

type lastWrite struct {
	over    []string // resourceVersions replaced, oldest first (at most maxOver)
	written *appsv1.ReplicaSet
}

// maxOver bounds the resourceVersions remembered per ReplicaSet.
const maxOver = 8

// fresh returns the object to sync from: the last write's result when the
// informer's copy is the one that write replaced, else the informer's.
func (l *lastWrites) fresh(key string, cached *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.byKey[key]
	if !ok {
		return cached
	}
	if w.written.UID == cached.UID && slices.Contains(w.over, cached.ResourceVersion) {
		return w.written
	}
	delete(l.byKey, key) // the informer caught up (or the object changed)
	return cached
}

// record remembers that a status write over from returned written.
func (l *lastWrites) record(key string, from, written *appsv1.ReplicaSet) {
	if written == nil || written == from {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = map[string]lastWrite{}
	}
	var over []string
	if w, ok := l.byKey[key]; ok && w.written == from {
		over = w.over // from was the last write's result: the informer may be further behind
	}
	over = append(over, from.ResourceVersion)
	if len(over) > maxOver {
		over = over[len(over)-maxOver:]
	}
	l.byKey[key] = lastWrite{over: over, written: written}
}

// forget drops what is remembered of key (the ReplicaSet is gone).
func (l *lastWrites) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byKey, key)
}
