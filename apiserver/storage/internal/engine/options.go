package engine

import (
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// Option adjusts a Config. The memory and bolt stores expose these same
// settings under their own names; they are written once here.
type Option func(*Config) error

// WithHistory keeps this many recent events for watches that start in the
// past (default 10,000); older starts fail with storage.ErrGone.
func WithHistory(events int) Option {
	return func(c *Config) error {
		c.Watch = append(c.Watch, watchcache.WithCapacity(events))
		return nil
	}
}

// WithHistoryMaxAge also forgets events older than d.
func WithHistoryMaxAge(d time.Duration) Option {
	return func(c *Config) error {
		c.Watch = append(c.Watch, watchcache.WithMaxAge(d))
		return nil
	}
}

// WithWatcherBuffer sets how many events a watcher may have pending before
// it is dropped (default 10,000, watchcache.DefaultWatcherBuffer).
func WithWatcherBuffer(events int) Option {
	return func(c *Config) error {
		c.Watch = append(c.Watch, watchcache.WithWatcherBuffer(events))
		return nil
	}
}

// WithBookmarkInterval sets how often watchers asking for bookmarks get one
// (default 5s).
func WithBookmarkInterval(d time.Duration) Option {
	return func(c *Config) error {
		c.Watch = append(c.Watch, watchcache.WithBookmarkInterval(d))
		return nil
	}
}

// WithContinueTTL sets how long after its last use the snapshot behind a
// continue token is kept (default 5m).
func WithContinueTTL(d time.Duration) Option {
	return func(c *Config) error {
		if d <= 0 {
			return fmt.Errorf("continue TTL %s: must be positive", d)
		}
		c.Index.SnapshotTTL = d
		return nil
	}
}

// WithClock sets the clock of bookmarks, history ages and snapshot TTLs.
func WithClock(clk clock.WithTicker) Option {
	return func(c *Config) error {
		if clk == nil {
			return fmt.Errorf("clock: nil")
		}
		c.Index.Clock = clk
		c.Watch = append(c.Watch, watchcache.WithClock(clk))
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) error {
		if l == nil {
			return fmt.Errorf("logger: nil")
		}
		c.Logger = l
		c.Watch = append(c.Watch, watchcache.WithLogger(l))
		return nil
	}
}

// WithMaxBatch caps the writes that share one group commit (default 1,000).
func WithMaxBatch(n int) Option {
	return func(c *Config) error {
		if n < 1 {
			return fmt.Errorf("max batch %d: must be at least 1", n)
		}
		c.MaxBatch = n
		return nil
	}
}
