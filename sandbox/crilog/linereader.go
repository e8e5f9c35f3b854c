package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// lineReader reads '\n'-terminated lines of a file with pread from an
// offset. Bytes after the last newline stay buffered, so a follower picks
// the line up whole once the writer has finished it.
type lineReader struct {
	f     *os.File
	off   int64 // file offset of buf[r]
	buf   []byte
	r, w  int
	limit int64 // read nothing at or past this offset
}

func newLineReader(f *os.File, off int64) *lineReader {
	return &lineReader{f: f, off: off, buf: make([]byte, 32<<10), limit: math.MaxInt64}
}

// next returns the next complete line, with its '\n', and its offset. The
// line is valid until the next call. It returns io.EOF when no complete
// line is available yet.
func (l *lineReader) next() ([]byte, int64, error) {
	for {
		if i := bytes.IndexByte(l.buf[l.r:l.w], '\n'); i >= 0 {
			line, off := l.buf[l.r:l.r+i+1], l.off
			l.r += i + 1
			l.off += int64(i + 1)
			return line, off, nil
		}
		if err := l.fill(); err != nil {
			return nil, 0, err
		}
	}
}

// fill reads more of the file; io.EOF means nothing more is there now.
func (l *lineReader) fill() error {
	if l.r > 0 {
		l.w = copy(l.buf, l.buf[l.r:l.w])
		l.r = 0
	}
	if l.w == len(l.buf) {
		l.buf = append(l.buf, make([]byte, len(l.buf))...)
	}
	at := l.end()
	space := l.buf[l.w:]
	if left := l.limit - at; left < int64(len(space)) {
		space = space[:max(left, 0)]
	}
	if len(space) == 0 {
		return io.EOF
	}
	n, err := l.f.ReadAt(space, at)
	l.w += n
	if n > 0 {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("crilog: read log file %s: %w", l.f.Name(), err)
}

// end is the file offset just past the bytes read so far.
func (l *lineReader) end() int64 { return l.off + int64(l.w-l.r) }

// rest returns the buffered bytes of an incomplete line.
func (l *lineReader) rest() []byte { return l.buf[l.r:l.w] }

// reset starts reading f from off, dropping anything buffered.
func (l *lineReader) reset(f *os.File, off int64) {
	l.f, l.off, l.r, l.w, l.limit = f, off, 0, 0, math.MaxInt64
}
