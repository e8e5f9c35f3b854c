package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// backoffRecord counts the failures since the last success of a job and
// when the last one happened.
type backoffRecord struct {
	failures    int32
	lastFailure time.Time
}

// remaining returns how long pod creation must still wait at now: base
// doubled per failure after the first, capped at max, counted from the
// last failure.
func (r backoffRecord) remaining(now time.Time, base, max time.Duration) time.Duration {
	if r.failures == 0 {
		return 0
	}
	d := base
	for i := int32(1); i < r.failures && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if elapsed := now.Sub(r.lastFailure); elapsed < d {
		return d - elapsed
	}
	return 0
}

// backoffStore keeps the records by job key (in memory: after a restart
// the count starts again, as in Kubernetes).
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{records: map[string]backoffRecord{}} }

// next returns the record updated with newly finished pods: a success
// resets the count to the failures that finished after it.
func (s *backoffStore) next(key string, succeeded, failed []*corev1.Pod) backoffRecord {
	s.mu.Lock()
	r := s.records[key]
	s.mu.Unlock()
	if len(succeeded) == 0 && len(failed) == 0 {
		return r
	}
	sortByFinish(succeeded)
	sortByFinish(failed)
	if len(succeeded) == 0 {
		r.failures += int32(len(failed))
		r.lastFailure = finishTime(failed[len(failed)-1])
		return r
	}
	lastSuccess := finishTime(succeeded[len(succeeded)-1])
	r = backoffRecord{}
	for i := len(failed) - 1; i >= 0; i-- {
		t := finishTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if r.failures == 0 {
			r.lastFailure = t
		}
		r.failures++
	}
	return r
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	s.records[key] = r
	s.mu.Unlock()
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	delete(s.records, key)
	s.mu.Unlock()
}

func sortByFinish(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return finishTime(pods[i]).Before(finishTime(pods[j])) })
}

// finishTime estimates when a pod finished: the last container
// termination, else its Ready=False transition, else its deletion (minus
// the grace period), else its creation.
func finishTime(p *corev1.Pod) time.Time {
	var last time.Time
	all := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			all = false
			break
		}
		if t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if all {
		return last
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}
