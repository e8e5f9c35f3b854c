package crilog

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of a Writer.
const (
	// DefaultMaxSize is the kubelet's default containerLogMaxSize (10Mi).
	DefaultMaxSize int64 = 10 << 20
	// DefaultMaxFiles is the kubelet's default containerLogMaxFiles.
	DefaultMaxFiles = 5
	// DefaultMaxLineSize is containerd's default max_container_log_line_size
	// (16 KiB): longer lines are split into partial entries.
	DefaultMaxLineSize = 16 << 10
)

// Option configures a Writer; it returns an error for a bad value.
type Option func(*options) error

type options struct {
	maxSize     int64
	maxFiles    int
	maxLineSize int
	clock       func() time.Time
	logger      *slog.Logger
}

func defaultOptions() options {
	return options{
		maxSize:     DefaultMaxSize,
		maxFiles:    DefaultMaxFiles,
		maxLineSize: DefaultMaxLineSize,
		clock:       time.Now,
		logger:      slog.New(slog.DiscardHandler),
	}
}

// WithMaxSize sets the size in bytes past which the log file is rotated:
// an entry that would make the file larger than bytes goes to a fresh
// file. 0 never rotates. An entry larger than bytes still goes whole into
// an empty file.
func WithMaxSize(bytes int64) Option {
	return func(o *options) error {
		if bytes < 0 {
			return fmt.Errorf("crilog: max size %d: must be >= 0 (0 disables rotation)", bytes)
		}
		o.maxSize = bytes
		return nil
	}
}

// WithMaxFiles sets how many files are kept, the current one included. As
// the kubelet's containerLogMaxFiles, it must be at least 2.
func WithMaxFiles(n int) Option {
	return func(o *options) error {
		if n < 2 {
			return fmt.Errorf("crilog: max files %d: must be >= 2 (the current file and at least one rotated)", n)
		}
		o.maxFiles = n
		return nil
	}
}

// WithMaxLineSize sets the largest content of one entry: a longer line is
// split into partial (P) entries of n bytes and a last full (F) one.
func WithMaxLineSize(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("crilog: max line size %d: must be > 0", n)
		}
		o.maxLineSize = n
		return nil
	}
}

// WithClock sets the clock that timestamps entries and names rotated
// files (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("crilog: nil clock")
		}
		o.clock = now
		return nil
	}
}

// WithLogger sets where the Writer reports I/O and rotation failures
// (discarded by default).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("crilog: nil logger")
		}
		o.logger = l
		return nil
	}
}
