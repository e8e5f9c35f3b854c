package bolt

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/apiserver/storage/internal/engine"
)

// DefaultLockTimeout is how long Open waits for another process to release
// the file.
const DefaultLockTimeout = time.Second

// Option configures a Store.
type Option func(*options) error

// options are the engine's settings (shared with the memory store) plus
// the file lock's.
type options struct {
	lockTimeout time.Duration
	engine      engine.Config
}

func defaultOptions() options {
	return options{lockTimeout: DefaultLockTimeout, engine: engine.Config{Logger: slog.Default()}}
}

// shared lifts an engine option, which the memory store offers too.
func shared(o engine.Option) Option { return func(b *options) error { return o(&b.engine) } }

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
func WithMaxBatch(n int) Option { return shared(engine.WithMaxBatch(n)) }

// WithHistory sets how many recent events are kept for watches that start
// in the past (default 10,000); older starts fail with storage.ErrGone.
func WithHistory(events int) Option { return shared(engine.WithHistory(events)) }

// WithHistoryMaxAge also forgets events older than d.
func WithHistoryMaxAge(d time.Duration) Option { return shared(engine.WithHistoryMaxAge(d)) }

// WithWatcherBuffer sets how many events a watcher may have pending before
// it is dropped (default 10,000, watchcache.DefaultWatcherBuffer).
func WithWatcherBuffer(events int) Option { return shared(engine.WithWatcherBuffer(events)) }

// WithBookmarkInterval sets how often watchers asking for bookmarks get one
// (default 5s).
func WithBookmarkInterval(d time.Duration) Option { return shared(engine.WithBookmarkInterval(d)) }

// WithContinueTTL sets how long after its last use the snapshot behind a
// continue token is kept (default 5m).
func WithContinueTTL(d time.Duration) Option { return shared(engine.WithContinueTTL(d)) }

// WithClock sets the clock of bookmarks, history ages and snapshot TTLs.
func WithClock(c clock.WithTicker) Option { return shared(engine.WithClock(c)) }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return shared(engine.WithLogger(l)) }
