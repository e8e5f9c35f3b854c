package crilog

import "bytes"

// The splitting rules are containerd's (internal/cri/io/logger.go), made
// independent of how the output is chunked by the container's writes:
//
//   - every line ending in '\n' is one full (F) entry; a "\r\n" ending is
//     stripped as a whole (containerd's readLine drops both bytes); any
//     other '\r' is content;
//   - a line whose content exceeds the maximum line size is cut into
//     partial (P) entries of exactly the maximum size, then one F entry
//     with the rest (1 to max bytes): a line of exactly max bytes is a
//     single F entry;
//   - an empty line is an F entry with empty content;
//   - bytes left without a newline when the stream closes are written as P
//     entries (cut the same way), never as F.
//
// Between writes a stream keeps at most max+1 bytes: the incomplete line,
// plus one '\r' that may yet turn out to start a "\r\n".

// split turns p into entries. Callers hold the Writer's lock.
func (s *streamWriter) split(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.pending = append(s.pending, p...)
			s.cutPending()
			return
		}
		line := p[:i]
		p = p[i+1:]
		if len(s.pending) > 0 {
			s.pending = append(s.pending, line...)
			s.emitLine(s.pending)
			s.pending = s.pending[:0]
			continue
		}
		s.emitLine(line)
	}
}

// emitLine writes one complete line (without its '\n').
func (s *streamWriter) emitLine(line []byte) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	max := s.w.opts.maxLineSize
	for len(line) > max {
		s.w.appendEntry(s.stream, line[:max], true)
		line = line[max:]
	}
	s.w.appendEntry(s.stream, line, false)
}

// cutPending writes the full-size partial entries at the front of the
// incomplete line, keeping a final '\r' out of the count.
func (s *streamWriter) cutPending() {
	max := s.w.opts.maxLineSize
	n := len(s.pending)
	if n > 0 && s.pending[n-1] == '\r' {
		n--
	}
	off := 0
	for n-off > max {
		s.w.appendEntry(s.stream, s.pending[off:off+max], true)
		off += max
	}
	if off > 0 {
		s.pending = s.pending[:copy(s.pending, s.pending[off:])]
	}
	// Give back the memory of a large write once it is consumed.
	if cap(s.pending) > 4*(max+1) && len(s.pending) <= max+1 {
		s.pending = append([]byte(nil), s.pending...)
	}
}

// closeLocked writes the incomplete line as partial entries and marks the
// stream closed. Callers hold the Writer's lock.
func (s *streamWriter) closeLocked() {
	s.closed = true
	rest := s.pending
	max := s.w.opts.maxLineSize
	for len(rest) > 0 {
		n := min(len(rest), max)
		s.w.appendEntry(s.stream, rest[:n], true)
		rest = rest[n:]
	}
	s.pending = nil
}
