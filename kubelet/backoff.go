package kubelet

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// backoff is the kubelet's per-key exponential back-off, with the semantics
// of client-go's flowcontrol.Backoff as the kubelet uses it for
// CrashLoopBackOff and image pulls (without jitter, so tests are exact):
//
//   - Next(key, eventTime) records a failure: the first, or one more than
//     ResetAfter after the last Next, gets Initial; each following one
//     doubles the delay, up to Max.
//   - InBackOffSince(key, eventTime) says eventTime (a container's
//     finishedAt) is less than the current delay ago.
//   - InBackOffSinceUpdate(key) says the last Next was less than the
//     current delay ago (image pulls).
type backoff struct {
	cfg   Backoff
	clock clock.PassiveClock

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(cfg Backoff, c clock.PassiveClock) *backoff {
	return &backoff{cfg: cfg, clock: c, entries: map[string]*backoffEntry{}}
}

// expired says eventTime is long enough after the last update for the
// back-off to start over.
func (b *backoff) expired(e *backoffEntry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > b.cfg.ResetAfter
}

// Next records a failure at eventTime and returns the new delay.
func (b *backoff) Next(key string, eventTime time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	switch {
	case e == nil || b.expired(e, eventTime):
		e = &backoffEntry{delay: b.cfg.Initial}
		b.entries[key] = e
	default:
		e.delay = min(2*e.delay, b.cfg.Max)
	}
	e.lastUpdate = b.clock.Now()
	return e.delay
}

// Get returns the current delay of key (0 without one).
func (b *backoff) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil {
		return e.delay
	}
	return 0
}

// InBackOffSince reports whether eventTime is less than the current delay
// ago, and when the back-off ends.
func (b *backoff) InBackOffSince(key string, eventTime time.Time) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil || b.expired(e, eventTime) {
		return false, time.Time{}
	}
	end := eventTime.Add(e.delay)
	return b.clock.Now().Before(end), end
}

// InBackOffSinceUpdate reports whether the last Next was less than the
// current delay ago, and when the back-off ends.
func (b *backoff) InBackOffSinceUpdate(key string) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil {
		return false, time.Time{}
	}
	end := e.lastUpdate.Add(e.delay)
	return b.clock.Now().Before(end), end
}

// Reset forgets key.
func (b *backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// ForgetPrefix forgets every key starting with prefix (a removed pod's).
func (b *backoff) ForgetPrefix(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.entries, k)
		}
	}
}
