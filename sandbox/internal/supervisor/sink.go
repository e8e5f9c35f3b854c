package supervisor

import (
	"fmt"
	"io"
	"time"

	"github.com/podkit/podkit/sandbox/crilog"
)

// logSink receives a task's output.
type logSink interface {
	// Stream returns the writer of one stream, stdoutStream or
	// stderrStream; Close flushes a trailing partial line.
	Stream(name string) io.WriteCloser
	Close() error
}

// Stream names, as they appear in CRI log lines.
const (
	stdoutStream = string(crilog.Stdout)
	stderrStream = string(crilog.Stderr)
)

// maxLogLine is the longest line written as one entry; longer lines are
// split into partial (P) entries, as the CRI format allows.
const maxLogLine = crilog.DefaultMaxLineSize

// openSink opens the CRI log file at path (appending, rotating by size), or
// a sink that discards everything when path is "".
func openSink(path string, now func() time.Time) (logSink, error) {
	if path == "" {
		return discardSink{}, nil
	}
	w, err := crilog.NewWriter(path, crilog.WithClock(now))
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return criSink{w}, nil
}

// criSink adapts a crilog.Writer.
type criSink struct{ w *crilog.Writer }

var _ logSink = criSink{}

func (s criSink) Stream(name string) io.WriteCloser { return s.w.Stream(crilog.Stream(name)) }
func (s criSink) Close() error                      { return s.w.Close() }

// discardSink drops output (a task without a log path).
type discardSink struct{}

var _ logSink = discardSink{}

func (discardSink) Stream(string) io.WriteCloser { return nopCloser{io.Discard} }
func (discardSink) Close() error                 { return nil }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
