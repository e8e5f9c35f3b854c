package memory

import (
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/apiserver/storage/internal/engine"
)

// Option configures a Store. The settings are shared with the bolt store;
// their rules live in one place (the stores' common engine).
type Option = engine.Option

// WithHistory sets how many recent events are kept for watches that start
// in the past (default 10,000); older starts fail with storage.ErrGone.
func WithHistory(events int) Option { return engine.WithHistory(events) }

// WithHistoryMaxAge also forgets events older than d (default: keep them
// until the history is full).
func WithHistoryMaxAge(d time.Duration) Option { return engine.WithHistoryMaxAge(d) }

// WithWatcherBuffer sets how many events a watcher may have pending before
// it is dropped (default 10,000, watchcache.DefaultWatcherBuffer).
func WithWatcherBuffer(events int) Option { return engine.WithWatcherBuffer(events) }

// WithBookmarkInterval sets how often watchers asking for bookmarks get one
// (default 5s).
func WithBookmarkInterval(d time.Duration) Option { return engine.WithBookmarkInterval(d) }

// WithContinueTTL sets how long after its last use the snapshot behind a
// continue token is kept (default 5m); later pages fail with
// storage.ErrContinueExpired.
func WithContinueTTL(d time.Duration) Option { return engine.WithContinueTTL(d) }

// WithClock sets the clock of bookmarks, history ages and snapshot TTLs.
func WithClock(c clock.WithTicker) Option { return engine.WithClock(c) }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return engine.WithLogger(l) }
