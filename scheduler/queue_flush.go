package scheduler

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// flush moves expired backoffs to the active heap and pods unschedulable
// for too long back into circulation, and returns when to look again
// (zero: nothing to wait for). Caller holds mu.
func (q *Queue) flush() time.Time {
	now := q.cfg.Clock.Now()
	changed := false
	for p := q.backoff.peek(); p != nil && !q.backoffExpiry(p).After(now); p = q.backoff.peek() {
		q.backoff.pop()
		q.toActiveOrGated(p)
		changed = true
	}
	if !q.leftoverAt.IsZero() && !q.leftoverAt.After(now) {
		q.leftoverAt = time.Time{}
		for uid, p := range q.unschedulable {
			deadline := p.Timestamp.Add(q.cfg.MaxInUnschedulable)
			if deadline.After(now) {
				if q.leftoverAt.IsZero() || deadline.Before(q.leftoverAt) {
					q.leftoverAt = deadline
				}
				continue
			}
			delete(q.unschedulable, uid)
			q.requeue(p)
			changed = true
		}
	}
	q.nextFlush = q.nextDeadline()
	if changed {
		q.changed()
	}
	return q.nextFlush
}

// Run moves pods out of backoff when it expires, and out of the
// unschedulable set after MaxInUnschedulable, until ctx is done. It sleeps
// on a timer for the next deadline; queue changes wake it.
func (q *Queue) Run(ctx context.Context) {
	for {
		q.mu.Lock()
		next := q.flush()
		q.mu.Unlock()
		var timerC <-chan time.Time
		var timer clock.Timer
		if !next.IsZero() {
			timer = q.cfg.Clock.NewTimer(max(next.Sub(q.cfg.Clock.Now()), time.Millisecond))
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-q.wake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
