package watchcache

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of a Cache.
const (
	DefaultCapacity         = 10000
	DefaultWatcherBuffer    = 10000
	DefaultBookmarkInterval = 5 * time.Second
	DefaultDispatchBudget   = 100 * time.Millisecond
)

// dispatchRefillPerSecond is how much dispatch budget each second of real
// time gives back, as kube-apiserver's cacher refills its own.
const dispatchRefillPerSecond = 50 * time.Millisecond

// Option configures a Cache. Options reject values that make no sense.
type Option func(*options) error

type options struct {
	capacity         int
	maxAge           time.Duration
	watcherBuffer    int
	bookmarkInterval time.Duration
	dispatchBudget   time.Duration
	clock            clock.WithTicker
	logger           *slog.Logger
}

func defaultOptions() options {
	return options{
		capacity:         DefaultCapacity,
		watcherBuffer:    DefaultWatcherBuffer,
		bookmarkInterval: DefaultBookmarkInterval,
		dispatchBudget:   DefaultDispatchBudget,
		clock:            clock.RealClock{},
		logger:           slog.Default(),
	}
}

// WithCapacity sets how many of the most recent events are kept for
// watches that start in the past (default 10,000). 0 keeps none: watches
// can then only start from the current revision.
func WithCapacity(events int) Option {
	return func(o *options) error {
		if events < 0 {
			return fmt.Errorf("watch cache capacity %d: must not be negative", events)
		}
		o.capacity = events
		return nil
	}
}

// WithMaxAge also forgets events older than d, even when the ring has room,
// so the history window is bounded in time as well as in count. 0 (the
// default) keeps events until the ring overflows.
func WithMaxAge(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("watch cache max age %s: must not be negative", d)
		}
		o.maxAge = d
		return nil
	}
}

// WithWatcherBuffer sets how many live events a watcher may have pending
// before it is dropped (default 10,000, as deep as the default history: a
// watcher further behind could not resume from it anyway). A watcher holds
// memory only for the events actually pending, so the limit costs idle
// watchers nothing.
func WithWatcherBuffer(events int) Option {
	return func(o *options) error {
		if events < 1 {
			return fmt.Errorf("watcher buffer %d: must be at least 1", events)
		}
		o.watcherBuffer = events
		return nil
	}
}

// WithDispatchBudget sets how long Append may wait, in all, for watchers
// whose buffer is full before dropping them (default 100ms), as
// kube-apiserver's cacher does with its dispatch timeout budget: a reader
// that is only momentarily behind (descheduled while writers burst) gets
// the time to catch up instead of being dropped and relisting, and the
// writers slow down meanwhile. The budget refills by 50ms per second up to
// d, so a reader that stays behind is still dropped and writers are never
// held up for long. 0 drops a watcher as soon as its buffer is full.
func WithDispatchBudget(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("dispatch budget %s: must not be negative", d)
		}
		o.dispatchBudget = d
		return nil
	}
}

// WithBookmarkInterval sets how often watchers that asked for bookmarks get
// one (default 5s).
func WithBookmarkInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("bookmark interval %s: must be positive", d)
		}
		o.bookmarkInterval = d
		return nil
	}
}

// WithClock sets the clock for event ages and bookmark tickers.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("watch cache clock: nil")
		}
		o.clock = c
		return nil
	}
}

// WithLogger sets the logger that reports dropped watchers.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("watch cache logger: nil")
		}
		o.logger = l
		return nil
	}
}
