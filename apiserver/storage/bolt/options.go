package bolt

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// DefaultLockTimeout is how long Open waits for another process to release
// the file.
const DefaultLockTimeout = time.Second

// Option configures a Store.
type Option func(*options) error

type options struct {
	lockTimeout time.Duration
	maxBatch    int
	watch       []watchcache.Option
	snapshotTTL time.Duration
	clock       clock.WithTicker
	logger      *slog.Logger
}

func defaultOptions() options {
	return options{lockTimeout: DefaultLockTimeout, logger: slog.Default()}
}

// WithLockTimeout sets how long Open waits for the file lock held by
// another process before failing with ErrLocked (default 1s).
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("lock timeout %s: must be positive", d)
		}
		o.lockTimeout = d
		return nil
	}
}

// WithMaxBatch caps the writes that share one transaction (default 1,000).
func WithMaxBatch(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("max batch %d: must be at least 1", n)
		}
		o.maxBatch = n
		return nil
	}
}

// WithHistory sets how many recent events are kept for watches that start
// in the past (default 10,000); older starts fail with storage.ErrGone.
func WithHistory(events int) Option {
	return func(o *options) error {
		o.watch = append(o.watch, watchcache.WithCapacity(events))
		return nil
	}
}

// WithHistoryMaxAge also forgets events older than d (default: keep them
// until the history is full).
func WithHistoryMaxAge(d time.Duration) Option {
	return func(o *options) error {
		o.watch = append(o.watch, watchcache.WithMaxAge(d))
		return nil
	}
}

// WithWatcherBuffer sets how many events a watcher may have pending before
// it is dropped (default 1,000).
func WithWatcherBuffer(events int) Option {
	return func(o *options) error {
		o.watch = append(o.watch, watchcache.WithWatcherBuffer(events))
		return nil
	}
}

// WithBookmarkInterval sets how often watchers asking for bookmarks get one
// (default 5s).
func WithBookmarkInterval(d time.Duration) Option {
	return func(o *options) error {
		o.watch = append(o.watch, watchcache.WithBookmarkInterval(d))
		return nil
	}
}

// WithContinueTTL sets how long after its last use the snapshot behind a
// continue token is kept (default 5m); later pages fail with
// storage.ErrContinueExpired.
func WithContinueTTL(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("continue TTL %s: must be positive", d)
		}
		o.snapshotTTL = d
		return nil
	}
}

// WithClock sets the clock of bookmarks, history ages and snapshot TTLs.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("clock: nil")
		}
		o.clock = c
		o.watch = append(o.watch, watchcache.WithClock(c))
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("logger: nil")
		}
		o.logger = l
		o.watch = append(o.watch, watchcache.WithLogger(l))
		return nil
	}
}
