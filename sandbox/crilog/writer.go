package crilog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// flushSize is the size past which a batch of entries is written out
// before more are formatted.
const flushSize = 64 << 10

// Writer appends CRI log entries to one file and rotates it by size. It is
// safe for concurrent use: every stream's entries are written whole, one
// entry never interleaves with another's bytes, and entries are stamped
// under the same lock that orders them, so times never go backwards in the
// file (given a monotonic clock).
//
// I/O errors on the file never fail a stream's Write: as in containerd,
// the container's output must keep draining even when the disk is full.
// Entries that cannot be written are dropped; the first error is logged
// (WithLogger) and returned by Close.
type Writer struct {
	path string
	opts options

	mu      sync.Mutex
	f       *os.File
	size    int64 // bytes in f
	batch   []byte
	streams []*streamWriter
	closed  bool
	err     error // first I/O error
	failing bool  // the last write failed (log once per streak)
	broken  bool  // the file may end inside an entry
	// retryRotateAt is the size below which no rotation is tried after
	// one failed.
	retryRotateAt int64
}

// NewWriter opens the CRI log file at path for appending, creating its
// parent directories (0755) and the file (0640) when missing.
func NewWriter(path string, opts ...Option) (*Writer, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if path == "" {
		return nil, errors.New("crilog: empty log path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("crilog: create directory of %s: %w", path, err)
	}
	w := &Writer{path: path, opts: o}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open opens w.path for appending and records its size. A file left
// ending inside an entry (a writer that crashed mid-write) gets a newline
// first so that the next entry starts a line of its own.
func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("crilog: open log file %s: %w", w.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("crilog: stat log file %s: %w", w.path, err)
	}
	w.f, w.size, w.broken = f, st.Size(), false
	if w.size > 0 {
		last := make([]byte, 1)
		r, err := os.Open(w.path)
		if err == nil {
			_, err = r.ReadAt(last, w.size-1)
			r.Close()
		}
		w.broken = err != nil || last[0] != '\n'
	}
	return nil
}

// Path returns the path of the current log file.
func (w *Writer) Path() string { return w.path }

// Stream returns a line splitter that writes what it is given as entries
// of stream s: each '\n'-terminated line becomes a full entry (longer lines
// are split into partial ones), and bytes after the last newline wait for
// the rest of their line. Close writes a pending incomplete line as a
// partial entry. Streams of one Writer may be written concurrently. An s
// other than Stdout or Stderr fails every Write with ErrInvalidStream.
func (w *Writer) Stream(s Stream) io.WriteCloser {
	sw := &streamWriter{w: w, stream: s}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		sw.closed = true
	} else {
		w.streams = append(w.streams, sw)
	}
	return sw
}

// Close writes every stream's pending incomplete line as a partial entry
// and closes the file. Writes after Close fail with ErrClosed. It returns
// the first I/O error the Writer met, if any; closing again returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	for _, s := range w.streams {
		s.closeLocked()
	}
	w.streams = nil
	w.closed = true
	w.flush()
	err := w.err
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("crilog: close log file %s: %w", w.path, cerr)
	}
	return err
}

// appendEntry formats one entry into the batch, rotating first when the
// entry would take the file past the maximum size. Callers hold w.mu.
func (w *Writer) appendEntry(s Stream, content []byte, partial bool) {
	e := Entry{Time: w.opts.clock(), Stream: s, Partial: partial, Content: content}
	start := len(w.batch)
	w.batch = e.Append(w.batch)
	n := int64(len(w.batch) - start)
	if max := w.opts.maxSize; max > 0 && w.size+int64(start)+n > max && w.size+int64(start) > 0 && w.size >= w.retryRotateAt {
		entry := append([]byte(nil), w.batch[start:]...)
		w.batch = w.batch[:start]
		w.flush()
		w.rotate(e.Time)
		w.batch = append(w.batch, entry...)
	}
	if len(w.batch) >= flushSize {
		w.flush()
	}
}

// flush writes the batch to the file. Callers hold w.mu.
func (w *Writer) flush() {
	if len(w.batch) == 0 {
		return
	}
	buf := w.batch
	if w.broken {
		buf = append([]byte{'\n'}, buf...)
	}
	n, err := w.f.Write(buf)
	w.size += int64(n)
	w.batch = w.batch[:0]
	if err != nil {
		w.broken = n > 0 || w.broken
		w.fail(fmt.Errorf("crilog: write log file %s: %w", w.path, err))
		return
	}
	w.broken = false
	if w.failing {
		w.failing = false
		w.opts.logger.Info("writing container log again", "path", w.path)
	}
}

// record keeps the first error for Close.
func (w *Writer) record(err error) {
	if w.err == nil {
		w.err = err
	}
}

// fail records a write error and logs it once per streak of failures.
func (w *Writer) fail(err error) {
	w.record(err)
	if !w.failing {
		w.failing = true
		w.opts.logger.Error("container log entries dropped", "path", w.path, "err", err)
	}
}

// streamWriter splits one stream's bytes into entries; its state is
// guarded by the Writer's lock.
type streamWriter struct {
	w       *Writer
	stream  Stream
	pending []byte // an incomplete line: at most maxLineSize+1 bytes between writes
	closed  bool
}

// Write implements io.Writer. It consumes all of p unless the stream is
// invalid or closed.
func (s *streamWriter) Write(p []byte) (int, error) {
	if !s.stream.valid() {
		return 0, fmt.Errorf("crilog: write to stream %q of %s: %w", s.stream, s.w.path, ErrInvalidStream)
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("crilog: write to %s stream of %s: %w", s.stream, w.path, ErrClosed)
	}
	s.split(p)
	w.flush()
	return len(p), nil
}

// Close writes a pending incomplete line as partial entries and closes the
// stream. Closing again does nothing.
func (s *streamWriter) Close() error {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closeLocked()
	w.flush()
	for i, o := range w.streams {
		if o == s {
			w.streams = append(w.streams[:i], w.streams[i+1:]...)
			break
		}
	}
	return nil
}
