package prober

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// worker runs one probe of one container in its own goroutine until its
// pod is removed. Its fields below trigger are owned by the goroutine.
type worker struct {
	m         *Manager
	pod       *podEntry
	container *containerEntry
	name      string
	kind      Kind
	spec      *corev1.Probe // defaulted
	trigger   chan struct{} // buffered 1: a request to probe now

	containerID string // the container the counters below are about
	lastResult  Result
	resultRun   int  // how many times in a row lastResult came
	onHold      bool // after a liveness/startup failure, until a new container
}

// poke asks the worker to probe now, without blocking.
func (w *worker) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// run is the worker's loop: a pass at start, then one per period tick, per
// poke, and when an initial delay ends.
func (w *worker) run(ctx context.Context) {
	defer w.m.wg.Done()
	clk := w.m.clock
	period := time.Duration(w.spec.PeriodSeconds) * time.Second
	if j := w.m.jitter(period); j > 0 {
		t := clk.NewTimer(j)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
	ticker := clk.NewTicker(period)
	defer ticker.Stop()
	var (
		delay  clock.Timer
		delayC <-chan time.Time
	)
	defer func() {
		if delay != nil {
			delay.Stop()
		}
	}()
	for {
		if wait := w.pass(ctx); wait > 0 {
			if delay == nil {
				delay = clk.NewTimer(wait)
			} else {
				if !delay.Stop() {
					select { // drop a fire nobody consumed
					case <-delay.C():
					default:
					}
				}
				delay.Reset(wait)
			}
			delayC = delay.C()
		}
		if hook := w.m.afterPass; hook != nil {
			hook(w)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-w.trigger:
		case <-delayC:
			delayC = nil
		}
	}
}

// snapshot is what a pass reads of the shared state.
type snapshot struct {
	id        string
	startedAt time.Time
	podIP     string
	running   bool
	started   bool
	deleting  bool
}

func (w *worker) snapshot() snapshot {
	w.m.mu.RLock()
	defer w.m.mu.RUnlock()
	ce := w.container
	return snapshot{
		id:        ce.id,
		startedAt: ce.startedAt,
		podIP:     ce.podIP,
		running:   ce.running,
		started:   ce.workers[Startup] == nil || ce.results[Startup] == Success,
		deleting:  w.pod.deleting,
	}
}

// pass probes the container once if it should be probed now, counts the
// result against the thresholds, records the state and sends the update.
// It returns how long until the initial delay ends when that is what kept
// it from probing, else 0.
func (w *worker) pass(ctx context.Context) time.Duration {
	s := w.snapshot()
	if s.id == "" {
		return 0 // not started yet
	}
	if s.id != w.containerID {
		// A new container: fresh counters, and probing resumes.
		w.containerID, w.lastResult, w.resultRun, w.onHold = s.id, Unknown, 0, false
	}
	if w.onHold || !s.running {
		return 0
	}
	if s.deleting && (w.kind == Liveness || w.kind == Startup) {
		// Quiet shutdown: a terminating container is not restarted.
		w.set(ctx, s.id, Success, outcome{})
		w.onHold = true
		return 0
	}
	delay := time.Duration(w.spec.InitialDelaySeconds) * time.Second
	if elapsed := w.m.clock.Since(s.startedAt); int32(elapsed.Seconds()) < w.spec.InitialDelaySeconds {
		return delay - elapsed
	}
	// Startup gates the others; once started, the startup probe stops.
	if (w.kind == Startup) == s.started {
		return 0
	}

	o := w.m.probe(ctx, w.kind, w.spec, target{container: w.container.spec, containerID: s.id, podIP: s.podIP})
	if ctx.Err() != nil {
		return 0 // stopped mid-probe: the result means nothing
	}
	if o.err != nil {
		w.m.log.Debug("probe errored", "pod", w.pod.name, "container", w.name, "probe", w.kind.String(), "err", o.err)
		w.report(ctx, s.id, w.current(), false, o)
		return 0
	}
	if o.result == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = o.result, 1
	}
	if (o.result == Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(o.result == Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		// Below the threshold: the state stays, the event is still recorded.
		if o.event != "" {
			w.report(ctx, s.id, w.current(), false, o)
		}
		return 0
	}
	w.set(ctx, s.id, o.result, o)
	if (w.kind == Liveness || w.kind == Startup) && o.result == Failure {
		// The kubelet restarts the container; wait for the new one.
		w.onHold, w.resultRun = true, 0
	}
	return 0
}

// current returns the container's state for this kind.
func (w *worker) current() Result {
	w.m.mu.RLock()
	defer w.m.mu.RUnlock()
	return w.container.results[w.kind]
}

// set records result as the container's state for this kind, if id is
// still the container's, and reports it when it changed or o carries an
// event. A startup success pokes the readiness worker so readiness is known
// at once rather than a period later.
func (w *worker) set(ctx context.Context, id string, result Result, o outcome) {
	w.m.mu.Lock()
	ce := w.container
	if ce.id != id {
		w.m.mu.Unlock()
		return
	}
	changed := ce.results[w.kind] != result
	ce.results[w.kind] = result
	readiness := ce.workers[Readiness]
	w.m.mu.Unlock()
	if changed || o.event != "" {
		w.report(ctx, id, result, changed, o)
	}
	if changed && w.kind == Startup && result == Success && readiness != nil {
		readiness.poke()
	}
}

// report sends an update unless the worker is being stopped.
func (w *worker) report(ctx context.Context, id string, result Result, changed bool, o outcome) {
	if ctx.Err() != nil {
		return
	}
	u := Update{
		PodUID:        w.pod.uid,
		ContainerName: w.name,
		ContainerID:   id,
		Probe:         w.kind,
		Result:        result,
		Changed:       changed,
		Event:         o.event,
		Message:       o.message,
	}
	select {
	case w.m.updates <- u:
	case <-ctx.Done():
	}
}
