package kubelet

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/kubelet/status"
)

// podWorker serialises everything done to one pod: one goroutine per pod
// runs syncs one at a time, woken by the pod's sources (API, static files),
// the PLEG, probe results and its own timer (back-off expiry, deadlines,
// resync). Pods are synced in parallel with each other.
type podWorker struct {
	uid    types.UID
	signal chan struct{} // capacity 1: wake-ups coalesce
	// admitted is told what of the pod counts against the node.
	admitted *admittedPods
	// wakeAt is when wakeups wakes the worker; wakeIndex is its place in
	// their heap (-1: none). Both are wakeups'.
	wakeAt    time.Time
	wakeIndex int

	mu sync.Mutex
	// pod is the latest desired pod from its source.
	pod *corev1.Pod
	// spec is specOf's spec, protobuf-encoded: podChanged compares a new
	// object's with it (nil until needed).
	spec   []byte
	specOf *corev1.Pod
	// removed: the pod is gone from its source (deleted from the API,
	// static file removed, or never known: an orphan); it is torn down
	// without writing status.
	removed bool
	static  bool
	// probeKills are containers a liveness or startup probe failed, by
	// container ID, with the probe kind ("liveness", "startup"); nil
	// until the first.
	probeKills map[string]string
	// active: admitted and not terminated (counts against the node).
	active bool
	// lastStatus is the status generated last, for readers outside the
	// worker (LogFile).
	lastStatus *corev1.PodStatus
	// cancelRun cancels the sync in progress when it is bringing the pod
	// up (not tearing it down), so a deletion does not wait for a slow
	// image pull.
	cancelRun context.CancelFunc

	// st belongs to the worker goroutine.
	st podState
}

// podState is what a worker knows of its pod between syncs.
type podState struct {
	firstSeen time.Time
	admitted  bool
	// terminated: the pod reached a terminal phase and its resources
	// were released; only deletion remains.
	terminated bool
	// override is the kubelet's verdict (rejection, deadline, soft block).
	override *status.Override
	// waiting are the reasons containers are not running, by name,
	// cleared by a successful start (Kubernetes' reasonCache).
	waiting map[string]status.Waiting
	// termMessages caches exited containers' termination messages by ID
	// (nil until a container exits).
	termMessages map[string]string
	// last is the status generated last (merged), the base of the next.
	last *corev1.PodStatus
	// cgroup is the pod's cgroup, once created.
	cgroup string
	// files are the pod's directories and files (pathsOf).
	files podPaths
	// dirsMade: a sync made the pod's directories (poddirs.go);
	// newPodDir and newLogDir: that sync created the pod's state and
	// log directories, so nothing was in them that the worker did not
	// put there.
	dirsMade, newPodDir, newLogDir bool
	// hostsWritten: the worker wrote the pod's etc-hosts file;
	// hostsChecked: this sync wrote it or found it current.
	hostsWritten, hostsChecked bool
	// containersCreated: the worker asked the runtime for a container.
	containersCreated bool
	// paths are the volumes' host paths from the last Setup.
	paths map[string]string
	// startObserved: the start metrics were recorded.
	startObserved bool
	// steps are the start steps already observed.
	steps     stepSet
	pullTime  time.Duration
	initStart time.Time
	// birth notes the steps of the pod's birth trace.
	birth birthRecord
	// mirrorChecked: the static pod's mirror is known to be current.
	mirrorChecked bool
}

// snapshot returns the desired pod and whether it was removed.
func (w *podWorker) snapshot() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.removed
}

// kick wakes the worker.
func (w *podWorker) kick() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// takeProbeKill returns and forgets the probe kind that failed container id.
func (w *podWorker) takeProbeKill(id string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	kind := w.probeKills[id]
	delete(w.probeKills, id)
	return kind
}

func (w *podWorker) setActive(on bool) {
	w.mu.Lock()
	w.active = on
	w.accountLocked()
	w.mu.Unlock()
}

// accountLocked tells admission what of the pod counts against the node
// now: its latest object while it is admitted, not terminated and not
// removed from its source. w.mu is held.
func (w *podWorker) accountLocked() {
	var counts *corev1.Pod
	if w.active && !w.removed {
		counts = w.pod
	}
	w.admitted.set(w.uid, counts)
}

// podWorkers owns the workers.
type podWorkers struct {
	k *Kubelet

	mu      sync.Mutex
	ctx     context.Context // set by start; nil before
	workers map[types.UID]*podWorker
	// finished are pods whose API object this kubelet deleted; updates
	// that still arrive for them are ignored until the deletion does.
	finished map[types.UID]bool
	wg       sync.WaitGroup
}

func newPodWorkers(k *Kubelet) *podWorkers {
	return &podWorkers{k: k, workers: map[types.UID]*podWorker{}, finished: map[types.UID]bool{}}
}

// newWorker returns a worker of pod, not yet started.
func (p *podWorkers) newWorker(pod *corev1.Pod) *podWorker {
	return &podWorker{uid: pod.UID, signal: make(chan struct{}, 1), admitted: &p.k.admitted, pod: pod, wakeIndex: -1,
		st: podState{firstSeen: p.k.clock.Now(), waiting: map[string]status.Waiting{}}}
}

// start runs a goroutine for every worker known so far, and for every
// later one, until ctx ends.
func (p *podWorkers) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx = ctx
	for _, w := range p.workers {
		p.launchLocked(w)
	}
}

func (p *podWorkers) launchLocked(w *podWorker) {
	if p.ctx == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.k.runWorker(p.ctx, w)
	}()
}

// wait waits for every worker goroutine to return.
func (p *podWorkers) wait() { p.wg.Wait() }

// update delivers the desired pod from a source.
func (p *podWorkers) update(pod *corev1.Pod, static bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished[pod.UID] {
		return
	}
	w := p.workers[pod.UID]
	if w == nil {
		w = p.newWorker(pod)
		w.static = static
		p.workers[pod.UID] = w
		p.launchLocked(w)
	} else {
		w.mu.Lock()
		changed := w.removed || w.pod == nil || w.podChangedLocked(pod)
		if w.pod != nil && w.pod.DeletionTimestamp == nil && pod.DeletionTimestamp != nil && w.cancelRun != nil {
			w.cancelRun()
		}
		w.pod, w.removed, w.static = pod, false, static
		if changed {
			// An echo leaves admission's account as it is: the object it
			// counts differs from this one only in status.
			w.accountLocked()
		}
		w.mu.Unlock()
		if !changed {
			return // the echo of a status write: nothing to do
		}
	}
	w.kick()
}

// podChangedLocked says an update of the worker's pod to cur is worth a
// sync: its spec, labels, annotations or deletion changed, not only its
// status (as the kubelet's pod config filters updates). w.mu is held.
func (w *podWorker) podChangedLocked(cur *corev1.Pod) bool {
	old := w.pod
	switch {
	case old.UID != cur.UID,
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp),
		!equality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds),
		!maps.Equal(old.Labels, cur.Labels),
		!maps.Equal(old.Annotations, cur.Annotations):
		return true
	case old.Status.Phase != cur.Status.Phase && (cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed):
		return true // finished by someone else (an eviction)
	}
	// Most updates are status echoes with the very same spec: equal
	// encodings prove it at a tenth of a semantic comparison's cost; a
	// difference may still be only in form (a quantity written another
	// way), which the semantic comparison settles.
	if w.specOf != old {
		w.spec, w.specOf = encodeSpec(old), old
	}
	curSpec := encodeSpec(cur)
	same := w.spec != nil && curSpec != nil && bytes.Equal(w.spec, curSpec)
	if curSpec != nil {
		w.spec, w.specOf = curSpec, cur // cur replaces old as the worker's pod
	}
	return !same && !equality.Semantic.DeepEqual(old.Spec, cur.Spec)
}

// encodeSpec is the pod's spec in protobuf, nil if it cannot be encoded.
func encodeSpec(pod *corev1.Pod) []byte {
	b, err := pod.Spec.Marshal()
	if err != nil {
		return nil
	}
	return b
}

// orphan starts a worker that tears down a pod only the runtime knows.
func (p *podWorkers) orphan(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers[pod.UID] != nil {
		return
	}
	w := p.newWorker(pod)
	w.removed = true
	p.workers[pod.UID] = w
	p.launchLocked(w)
	w.kick()
}

// remove says the pod is gone from its source.
func (p *podWorkers) remove(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.finished, uid)
	if w := p.workers[uid]; w != nil {
		w.mu.Lock()
		w.removed = true
		w.accountLocked()
		if w.cancelRun != nil {
			w.cancelRun()
		}
		w.mu.Unlock()
		w.kick()
	}
}

// kick wakes the worker of uid, if any.
func (p *podWorkers) kick(uid types.UID) bool {
	p.mu.Lock()
	w := p.workers[uid]
	p.mu.Unlock()
	if w != nil {
		w.kick()
	}
	return w != nil
}

// get returns the worker of uid.
func (p *podWorkers) get(uid types.UID) *podWorker {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.workers[uid]
}

// all returns every worker.
func (p *podWorkers) all() []*podWorker {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*podWorker, 0, len(p.workers))
	for _, w := range p.workers {
		out = append(out, w)
	}
	return out
}

// finish forgets a worker whose pod is gone, unless its source brought it
// back meanwhile; deleted says the kubelet deleted the API object. It
// returns false when the worker must go on.
func (p *podWorkers) finish(w *podWorker, deleted bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.mu.Lock()
	again := !w.removed && !deleted
	w.mu.Unlock()
	if again {
		return false
	}
	delete(p.workers, w.uid)
	p.k.admitted.set(w.uid, nil) // gone: it counts no more
	if deleted {
		p.finished[w.uid] = true
	}
	return true
}

// workerOutcome says what became of a worker after a sync.
type workerOutcome int

const (
	// workerContinues: the pod still needs its worker.
	workerContinues workerOutcome = iota
	// workerDone: the pod is gone and everything of it was removed.
	workerDone
	// workerDeletedPod: as workerDone, and the kubelet deleted the API
	// object.
	workerDeletedPod
)

// runWorker is a worker's goroutine: it syncs when kicked, and has
// wakeups kick it when the sync asked to be run again (a resync interval
// after it starts, until its first sync says otherwise).
func (k *Kubelet) runWorker(ctx context.Context, w *podWorker) {
	defer k.wakeups.cancel(w)
	k.wakeups.schedule(w, k.clock.Now().Add(k.cfg.ResyncInterval))
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.signal:
		}
		next, out := k.syncWorker(ctx, w)
		if out != workerContinues && k.workers.finish(w, out == workerDeletedPod) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		k.wakeups.schedule(w, next)
		if k.log.Enabled(ctx, slog.LevelDebug) {
			k.log.Debug("pod synced", "podUID", w.uid, "next", next, "now", k.clock.Now())
		}
	}
}
