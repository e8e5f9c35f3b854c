package kubelet

import (
	"context"
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

	mu sync.Mutex
	// pod is the latest desired pod from its source.
	pod *corev1.Pod
	// removed: the pod is gone from its source (deleted from the API,
	// static file removed, or never known: an orphan); it is torn down
	// without writing status.
	removed bool
	static  bool
	// probeKills are containers a liveness or startup probe failed, by
	// container ID, with the probe kind ("liveness", "startup").
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
	// termMessages caches exited containers' termination messages by ID.
	termMessages map[string]string
	// last is the status generated last (merged), the base of the next.
	last *corev1.PodStatus
	// cgroup is the pod's cgroup, once created.
	cgroup string
	// paths are the volumes' host paths from the last Setup.
	paths map[string]string
	// startObserved: the start metrics were recorded.
	startObserved bool
	steps         map[string]bool
	pullTime      time.Duration
	initStart     time.Time
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
	w.mu.Unlock()
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
		w = &podWorker{uid: pod.UID, signal: make(chan struct{}, 1), probeKills: map[string]string{}}
		w.st = podState{firstSeen: p.k.clock.Now(), waiting: map[string]status.Waiting{}, termMessages: map[string]string{}, steps: map[string]bool{}}
		p.workers[pod.UID] = w
		w.pod, w.static = pod, static
		p.launchLocked(w)
	} else {
		w.mu.Lock()
		changed := w.removed || w.pod == nil || podChanged(w.pod, pod)
		if w.pod != nil && w.pod.DeletionTimestamp == nil && pod.DeletionTimestamp != nil && w.cancelRun != nil {
			w.cancelRun()
		}
		w.pod, w.removed, w.static = pod, false, static
		w.mu.Unlock()
		if !changed {
			return // the echo of a status write: nothing to do
		}
	}
	w.kick()
}

// podChanged says an update of a pod is worth a sync: its spec, labels,
// annotations or deletion changed, not only its status (as the kubelet's
// pod config filters updates).
func podChanged(old, cur *corev1.Pod) bool {
	switch {
	case old.UID != cur.UID,
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp),
		!equality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds),
		!equality.Semantic.DeepEqual(old.Labels, cur.Labels),
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations):
		return true
	case old.Status.Phase != cur.Status.Phase && (cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed):
		return true // finished by someone else (an eviction)
	}
	return !equality.Semantic.DeepEqual(old.Spec, cur.Spec)
}

// orphan starts a worker that tears down a pod only the runtime knows.
func (p *podWorkers) orphan(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers[pod.UID] != nil {
		return
	}
	w := &podWorker{uid: pod.UID, signal: make(chan struct{}, 1), probeKills: map[string]string{}, pod: pod, removed: true}
	w.st = podState{firstSeen: p.k.clock.Now(), waiting: map[string]status.Waiting{}, termMessages: map[string]string{}, steps: map[string]bool{}}
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
	if deleted {
		p.finished[w.uid] = true
	}
	return true
}

// activePods returns the pods admitted and not terminated, but not uid.
func (p *podWorkers) activePods(except types.UID) []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Pod
	for uid, w := range p.workers {
		w.mu.Lock()
		if uid != except && w.active && !w.removed && w.pod != nil {
			out = append(out, w.pod)
		}
		w.mu.Unlock()
	}
	return out
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

// runWorker is a worker's goroutine.
func (k *Kubelet) runWorker(ctx context.Context, w *podWorker) {
	timer := k.clock.NewTimer(k.cfg.ResyncInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.signal:
		case <-timer.C():
		}
		next, out := k.syncWorker(ctx, w)
		if out != workerContinues && k.workers.finish(w, out == workerDeletedPod) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(k.until(next))
		k.log.Debug("pod synced", "podUID", w.uid, "next", next, "now", k.clock.Now())
		// The clock may have passed next while the timer was set.
		if !k.clock.Now().Before(next) {
			w.kick()
		}
	}
}
