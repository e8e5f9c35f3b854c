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
	DefaultWatcherBuffer    = 1000
	DefaultBookmarkInterval = 5 * time.Second
)

// Option configures a Cache. Options reject values that make no sense.
type Option func(*options) error

type options struct {
	capacity         int
	maxAge           time.Duration
	watcherBuffer    int
	bookmarkInterval time.Duration
	clock            clock.WithTicker
	logger           *slog.Logger
}

func defaultOptions() options {
	return options{
		capacity:         DefaultCapacity,
		watcherBuffer:    DefaultWatcherBuffer,
		bookmarkInterval: DefaultBookmarkInterval,
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
// before it is dropped (default 1,000).
func WithWatcherBuffer(events int) Option {
	return func(o *options) error {
		if events < 1 {
			return fmt.Errorf("watcher buffer %d: must be at least 1", events)
		}
		o.watcherBuffer = events
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
