package scheduler

import (
	"context"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// QueuedPodInfo is a pod waiting in (or popped from) the scheduling queue.
type QueuedPodInfo struct {
	*PodInfo
	// Timestamp is when the pod was last added to the queue; the active
	// queue orders pods of equal priority by it, and backoff counts from it.
	Timestamp time.Time
	// Attempts counts scheduling attempts so far.
	Attempts int
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// UnschedulablePlugins are the plugins that rejected the pod in its last
	// attempt; only events they registered for bring it back.
	UnschedulablePlugins map[string]bool
	// GatedBy is the error of the PreEnqueuer that holds the pod back.
	GatedBy error
}

// QueueConfig tunes a Queue. Zero values take the defaults.
type QueueConfig struct {
	Clock clock.WithTicker
	// InitialBackoff is the backoff after the first failed attempt (1s); it
	// doubles per attempt up to MaxBackoff (10s).
	InitialBackoff, MaxBackoff time.Duration
	// MaxInUnschedulable is how long a pod may wait for a cluster event
	// before it is retried anyway (5m).
	MaxInUnschedulable time.Duration
	// PreEnqueue, if set, gates pods before the active queue.
	PreEnqueue func(pod *corev1.Pod) error
	// EventMatches reports whether a cluster event may help the pod; nil
	// means every event does.
	EventMatches func(p *QueuedPodInfo, ev ClusterEvent) bool
	// OnChange is called, under the queue's lock, with the sizes after
	// every change (for metrics).
	OnChange func(active, backoff, unschedulable, gated int)
}

// Queue is the scheduling queue: an active heap (priority, then arrival), a
// backoff heap (by backoff expiry), the unschedulable pods that wait for a
// cluster event, and the gated pods that wait for an update. Pop blocks
// while the active heap is empty; nothing polls.
type Queue struct {
	cfg           QueueConfig
	mu            sync.Mutex
	cond          *sync.Cond
	active        *podHeap
	backoff       *podHeap
	unschedulable map[types.UID]*QueuedPodInfo
	gated         map[types.UID]*QueuedPodInfo
	// schedulingCycle counts pops; eventCycle[b] is the cycle of the last
	// cluster event of bit b, so a pod failing after an event that may have
	// helped it (it could not see it) backs off instead of waiting for
	// another event.
	schedulingCycle int64
	eventCycle      [eventKinds]int64
	closed          bool
	wake            chan struct{}
	// leftoverAt is the earliest time an unschedulable pod may have waited
	// MaxInUnschedulable (zero: none waiting).
	leftoverAt time.Time
	// nextFlush is when Run will flush next (zero: not waiting on a time).
	nextFlush time.Time
}

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = cfg.InitialBackoff
	}
	if cfg.MaxInUnschedulable <= 0 {
		cfg.MaxInUnschedulable = 5 * time.Minute
	}
	q := &Queue{
		cfg: cfg,
		active: newPodHeap(func(a, b *QueuedPodInfo) bool {
			pa, pb := podPriority(a.Pod), podPriority(b.Pod)
			return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
		}),
		unschedulable: map[types.UID]*QueuedPodInfo{},
		gated:         map[types.UID]*QueuedPodInfo{},
		wake:          make(chan struct{}, 1),
	}
	q.backoff = newPodHeap(func(a, b *QueuedPodInfo) bool { return q.backoffExpiry(a).Before(q.backoffExpiry(b)) })
	q.cond = sync.NewCond(&q.mu)
	return q
}

func podPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// BackoffDuration is the backoff after attempts failed attempts: the
// initial backoff doubled per further attempt, capped at the maximum.
func (q *Queue) BackoffDuration(attempts int) time.Duration {
	d := q.cfg.InitialBackoff
	for i := 1; i < attempts; i++ {
		if d > q.cfg.MaxBackoff-d {
			return q.cfg.MaxBackoff
		}
		d += d
	}
	return d
}

func (q *Queue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.BackoffDuration(p.Attempts))
}

func (q *Queue) isBackingOff(p *QueuedPodInfo) bool {
	return p.Attempts > 0 && q.backoffExpiry(p).After(q.cfg.Clock.Now())
}

// changed reports sizes, wakes Pop and the flusher. Caller holds mu.
func (q *Queue) changed() {
	if q.cfg.OnChange != nil {
		q.cfg.OnChange(q.active.Len(), q.backoff.Len(), len(q.unschedulable), len(q.gated))
	}
	q.cond.Broadcast()
	if d := q.nextDeadline(); !d.IsZero() && (q.nextFlush.IsZero() || d.Before(q.nextFlush)) {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// nextDeadline is the earliest backoff expiry or unschedulable leftover
// time. Caller holds mu.
func (q *Queue) nextDeadline() time.Time {
	next := q.leftoverAt
	if p := q.backoff.peek(); p != nil {
		if e := q.backoffExpiry(p); next.IsZero() || e.Before(next) {
			next = e
		}
	}
	return next
}

// toActiveOrGated puts p in the active heap, or in the gated set when the
// PreEnqueue check rejects it. Caller holds mu.
func (q *Queue) toActiveOrGated(p *QueuedPodInfo) {
	p.GatedBy = nil
	if q.cfg.PreEnqueue != nil {
		if err := q.cfg.PreEnqueue(p.Pod); err != nil {
			p.GatedBy = err
			q.gated[p.Pod.UID] = p
			return
		}
	}
	delete(q.gated, p.Pod.UID)
	q.active.addOrUpdate(p)
}

// requeue puts a pod that waited back into circulation: to the backoff
// heap if it is still backing off, else to the active heap. Caller holds mu.
func (q *Queue) requeue(p *QueuedPodInfo) {
	if q.isBackingOff(p) {
		q.backoff.addOrUpdate(p)
	} else {
		q.toActiveOrGated(p)
	}
}

func (q *Queue) removeEverywhere(uid types.UID) bool {
	a := q.active.delete(uid)
	b := q.backoff.delete(uid)
	_, u := q.unschedulable[uid]
	_, g := q.gated[uid]
	delete(q.unschedulable, uid)
	delete(q.gated, uid)
	return a || b || u || g
}

// Add queues a new pending pod.
func (q *Queue) Add(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeEverywhere(pod.UID)
	q.toActiveOrGated(&QueuedPodInfo{PodInfo: NewPodInfo(pod), Timestamp: q.cfg.Clock.Now()})
	q.changed()
}

// Update replaces a queued pod. An unschedulable pod whose spec or labels
// changed is retried; a status-only change (such as the scheduler's own
// PodScheduled condition) leaves it waiting. A pod not queued (being
// scheduled) is queued again; the attempt in flight then will not re-add it.
func (q *Queue) Update(old, pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := pod.UID
	if p := q.gated[uid]; p != nil {
		p.PodInfo = NewPodInfo(pod)
		q.toActiveOrGated(p)
	} else if p := q.unschedulable[uid]; p != nil {
		p.PodInfo = NewPodInfo(pod)
		if old != nil && !podUpdated(old, pod) {
			return
		}
		delete(q.unschedulable, uid)
		q.requeue(p)
	} else if p, ok := q.active.get(uid); ok {
		p.PodInfo = NewPodInfo(pod)
		q.active.addOrUpdate(p)
	} else if p, ok := q.backoff.get(uid); ok {
		p.PodInfo = NewPodInfo(pod)
		q.backoff.addOrUpdate(p)
	} else {
		q.toActiveOrGated(&QueuedPodInfo{PodInfo: NewPodInfo(pod), Timestamp: q.cfg.Clock.Now()})
	}
	q.changed()
}

// podUpdated reports whether anything but status and bookkeeping metadata
// changed.
func podUpdated(old, pod *corev1.Pod) bool {
	strip := func(p *corev1.Pod) corev1.Pod {
		c := *p
		c.ResourceVersion, c.Generation, c.ManagedFields = "", 0, nil
		c.Status = corev1.PodStatus{}
		return c
	}
	return !reflect.DeepEqual(strip(old), strip(pod))
}

// Delete drops a pod from the queue.
func (q *Queue) Delete(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.removeEverywhere(pod.UID) {
		q.changed()
	}
}

// Pop blocks until a pod is active and returns it, its Attempts counted.
// It returns ErrQueueClosed after Close, or ctx's error.
func (q *Queue) Pop(ctx context.Context) (*QueuedPodInfo, error) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed && ctx.Err() == nil {
		q.cond.Wait()
	}
	if q.closed {
		return nil, ErrQueueClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := q.active.pop()
	p.Attempts++
	if p.InitialAttemptTimestamp.IsZero() {
		p.InitialAttemptTimestamp = q.cfg.Clock.Now()
	}
	q.schedulingCycle++
	q.changed()
	return p, nil
}

// SchedulingCycle returns the number of pops so far; pass it to
// AddUnschedulableIfNotPresent for the attempt that popped the pod.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// AddUnschedulableIfNotPresent requeues a pod after a failed attempt
// started at cycle. Rejected pods wait in the unschedulable set for a
// cluster event, unless one came during the attempt; pods that failed with
// an error (rejected false) back off. A pod already queued again (updated
// meanwhile) is left as it is.
func (q *Queue) AddUnschedulableIfNotPresent(p *QueuedPodInfo, cycle int64, rejected bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := p.Pod.UID
	if _, ok := q.active.get(uid); ok {
		return
	}
	if _, ok := q.backoff.get(uid); ok {
		return
	}
	if q.unschedulable[uid] != nil || q.gated[uid] != nil {
		return
	}
	p.Timestamp = q.cfg.Clock.Now()
	if !rejected || q.missedEvent(p, cycle) {
		q.backoff.addOrUpdate(p)
	} else {
		q.unschedulable[uid] = p
		if q.leftoverAt.IsZero() {
			q.leftoverAt = p.Timestamp.Add(q.cfg.MaxInUnschedulable)
		}
	}
	q.changed()
}

// eventKinds is the number of ClusterEvent bits.
const eventKinds = 6

// missedEvent reports whether an event that may help p happened since
// the scheduling cycle it was popped in. Caller holds mu.
func (q *Queue) missedEvent(p *QueuedPodInfo, cycle int64) bool {
	for b := range eventKinds {
		if q.eventCycle[b] >= cycle && cycle > 0 &&
			(q.cfg.EventMatches == nil || q.cfg.EventMatches(p, ClusterEvent(1<<b))) {
			return true
		}
	}
	return false
}

// MoveAllToActiveOrBackoffQueue retries the unschedulable pods that ev may
// help: to the backoff heap if still backing off, else to the active heap.
func (q *Queue) MoveAllToActiveOrBackoffQueue(ev ClusterEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	for uid, p := range q.unschedulable {
		if q.cfg.EventMatches != nil && !q.cfg.EventMatches(p, ev) {
			continue
		}
		delete(q.unschedulable, uid)
		q.requeue(p)
		moved = true
	}
	for b := range eventKinds {
		if ev&(1<<b) != 0 {
			q.eventCycle[b] = q.schedulingCycle
		}
	}
	if moved {
		q.changed()
	}
}

// Close wakes Pop callers with ErrQueueClosed.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Len returns the sizes of the active, backoff, unschedulable and gated sets.
func (q *Queue) Len() (active, backoff, unschedulable, gated int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable), len(q.gated)
}

// PendingPods returns every queued pod.
func (q *Queue) PendingPods() []*corev1.Pod {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*corev1.Pod
	for _, h := range []*podHeap{q.active, q.backoff} {
		for _, p := range h.list() {
			out = append(out, p.Pod)
		}
	}
	for _, m := range []map[types.UID]*QueuedPodInfo{q.unschedulable, q.gated} {
		for _, p := range m {
			out = append(out, p.Pod)
		}
	}
	return out
}
