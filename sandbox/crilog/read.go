package crilog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"
)

// DefaultPollInterval is how often a follower looks for new output,
// rotation and truncation when ReadOptions.PollInterval is 0.
const DefaultPollInterval = 100 * time.Millisecond

// ReadOptions select and shape what ReadLogs writes; they mirror the
// kubelet's view of v1.PodLogOptions. The zero value writes nothing
// (TailLines 0): set TailLines to -1 for the whole file.
type ReadOptions struct {
	// Follow keeps reading new output, across rotations, until ctx is
	// done or Done is closed.
	Follow bool
	// TailLines is how many of the last lines to write, counted in
	// logical lines (a run of partial entries and the full entry that
	// ends it count as one; so does a trailing unfinished run). <0: all.
	// With Stream set, only that stream's lines are counted.
	TailLines int64
	// Since drops lines whose first entry is older than it.
	Since time.Time
	// Timestamps prefixes every line with its first entry's time in the
	// kubelet's fixed-width RFC 3339 format and a space.
	Timestamps bool
	// LimitBytes stops after this many bytes have been written, prefixes
	// included, cutting the last line short. <=0: no limit.
	LimitBytes int64
	// Stream selects one stream; "" writes both.
	Stream Stream
	// Done, when not nil, is closed once the container has exited and
	// its output has been written completely (the Writer's streams are
	// closed). A follower then writes what is left, across a last
	// rotation too, and returns nil.
	Done <-chan struct{}
	// PollInterval is how often a follower checks the file (0:
	// DefaultPollInterval).
	PollInterval time.Duration
	// Logger receives reports of malformed lines skipped (nil: discard).
	Logger *slog.Logger
}

// errLimit ends a read whose LimitBytes has been reached; it is not a
// failure.
var errLimit = errors.New("byte limit reached")

// ReadLogs writes the CRI log file at path to stdout and stderr as the
// kubelet serves `kubectl logs`: entries of each stream are joined back
// into the container's lines (partial entries without a newline, full ones
// with one), filtered and shaped by opts. A nil stdout or stderr drops
// that stream. Malformed lines are skipped, and an incomplete last line
// (a write in progress) is never written.
//
// Without Follow it writes what the file held when it was opened and
// returns. With Follow it keeps polling (see the package doc for why
// polling) and returns ctx.Err() when ctx is done, or nil once opts.Done
// is closed and everything left has been written, or once LimitBytes is
// reached.
func ReadLogs(ctx context.Context, path string, opts ReadOptions, stdout, stderr io.Writer) error {
	if opts.Stream != "" && !opts.Stream.valid() {
		return fmt.Errorf("crilog: read %s: stream %q: %w", path, opts.Stream, ErrInvalidStream)
	}
	if opts.PollInterval < 0 {
		return fmt.Errorf("crilog: read %s: negative poll interval %s", path, opts.PollInterval)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("crilog: open log file %s: %w", path, err)
	}
	rd := &reader{path: path, f: f, opts: &opts}
	defer func() { rd.f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("crilog: stat log file %s: %w", path, err)
	}
	end := st.Size()
	rd.out = newRenderer(&opts, stdout, stderr)
	from := int64(0)
	if opts.TailLines >= 0 {
		t, err := findTail(f, end, opts.TailLines, opts.Stream, opts.Logger)
		if err != nil {
			return fmt.Errorf("crilog: tail %d lines of %s: %w", opts.TailLines, path, err)
		}
		from = t.from
		rd.out.skipBefore = t.start
		for i := range rd.out.st {
			rd.out.st[i].inLine = t.midLine[i]
		}
	}
	rd.lr = newLineReader(f, from)
	if !opts.Follow {
		rd.lr.limit = end
		err = rd.drain()
	} else {
		err = rd.follow(ctx)
	}
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

// lineState is a stream's position in its logical lines.
type lineState struct {
	inLine bool // the last entry written or skipped was partial
	keep   bool // the current line passed the Since filter
}

// renderer writes entries as the kubelet does.
type renderer struct {
	opts       *ReadOptions
	out        [2]io.Writer
	st         [2]lineState
	skipBefore [2]int64 // entries of the first file below these offsets are skipped (tail)
	remain     int64
	buf        []byte
}

func newRenderer(opts *ReadOptions, stdout, stderr io.Writer) *renderer {
	r := &renderer{opts: opts, out: [2]io.Writer{stdout, stderr}, remain: math.MaxInt64}
	if opts.LimitBytes > 0 {
		r.remain = opts.LimitBytes
	}
	return r
}

// newFile forgets the first file's tail offsets.
func (r *renderer) newFile() { r.skipBefore = [2]int64{} }

// line renders one raw line found at offset off.
func (r *renderer) line(path string, raw []byte, off int64) error {
	e, err := ParseLine(raw)
	if err != nil {
		r.opts.Logger.Warn("skipping malformed container log line", "path", path, "offset", off, "err", err)
		return nil
	}
	if r.opts.Stream != "" && e.Stream != r.opts.Stream {
		return nil
	}
	i := e.Stream.index()
	if off < r.skipBefore[i] || r.out[i] == nil {
		return nil
	}
	st := &r.st[i]
	atStart := !st.inLine
	if atStart {
		st.keep = !e.Time.Before(r.opts.Since)
	}
	st.inLine = e.Partial
	if !st.keep {
		return nil
	}
	buf := r.buf[:0]
	if r.opts.Timestamps && atStart {
		buf = e.Time.AppendFormat(buf, timeFormatOut)
		buf = append(buf, ' ')
	}
	buf = append(buf, e.Content...)
	if !e.Partial {
		buf = append(buf, '\n')
	}
	r.buf = buf
	if int64(len(buf)) > r.remain {
		buf = buf[:r.remain]
	}
	n, err := r.out[i].Write(buf)
	r.remain -= int64(n)
	if err != nil {
		return fmt.Errorf("crilog: write %s of %s: %w", e.Stream, path, err)
	}
	if n < len(buf) {
		return fmt.Errorf("crilog: write %s of %s: %w", e.Stream, path, io.ErrShortWrite)
	}
	if r.remain <= 0 {
		return errLimit
	}
	return nil
}
