package crilog

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
)

// tailProbe is how far back past the last selected line the tail scan
// keeps looking for a stream it has not seen yet, to learn whether that
// stream ends in an unfinished line whose rest must not be followed as a
// line of its own.
const tailProbe = 64 << 10

// tailStart is where reading starts for TailLines.
type tailStart struct {
	// from is the offset the forward read starts at.
	from int64
	// start holds, per stream, the offset of its first selected entry;
	// the stream's entries before it are skipped.
	start [2]int64
	// midLine marks a stream none of whose lines were selected and whose
	// last entry is partial: its continuation belongs to a skipped line.
	midLine [2]bool
}

// findTail finds the last n logical lines of f[0:end), of stream want (""
// both). Lines are counted per stream, since the partial entries of one
// stream's line may be interleaved with the other stream's entries; the
// lines selected are the n whose last entry comes last in the file.
func findTail(f io.ReaderAt, end, n int64, want Stream, log *slog.Logger) (tailStart, error) {
	t := tailStart{start: [2]int64{-1, -1}}
	var seen, done [2]bool
	active := [2]bool{want != Stderr, want != Stdout}
	count := int64(0)
	limit := end // offset past the last complete line
	finished := func(off int64) bool {
		if count < n {
			return false
		}
		for i := range 2 {
			if active[i] && seen[i] && !done[i] {
				return false // a selected line may start further back
			}
			if active[i] && !seen[i] && off >= end-tailProbe {
				return false
			}
		}
		return true
	}
	err := scanBackward(f, end, func(line []byte, off int64) bool {
		if line[len(line)-1] != '\n' {
			limit = off // incomplete: a write in progress
			return true
		}
		e, err := ParseLine(line)
		if err != nil {
			log.Debug("tail: skipping malformed container log line", "offset", off, "err", err)
			return true
		}
		i := e.Stream.index()
		if !active[i] || done[i] {
			return !finished(off)
		}
		first := !seen[i]
		seen[i] = true
		switch {
		case (first || !e.Partial) && count == n:
			// A line that is not among the last n.
			done[i] = true
			t.midLine[i] = first && e.Partial
		case first || !e.Partial:
			count++
			t.start[i] = off
		default:
			t.start[i] = off // the selected line starts further back
		}
		return !finished(off)
	})
	if err != nil {
		return t, err
	}
	t.from = limit
	for i := range t.start {
		if t.start[i] < 0 {
			t.start[i] = limit
		}
		t.from = min(t.from, t.start[i])
	}
	return t, nil
}

// scanBackward calls fn with each line of f[0:end), last first, with its
// '\n' (the last line may lack it) and its offset, until fn returns false.
// The line is valid only during the call.
func scanBackward(f io.ReaderAt, end int64, fn func(line []byte, off int64) bool) error {
	const chunk = 32 << 10
	var buf []byte // f[pos:lineEnd]
	pos, lineEnd := end, end
	for lineEnd > 0 {
		// The current line ends at lineEnd; the '\n' before its last byte
		// ends the previous one.
		if search := lineEnd - 1 - pos; search > 0 {
			if i := bytes.LastIndexByte(buf[:search], '\n'); i >= 0 {
				start := pos + int64(i) + 1
				if !fn(buf[i+1:lineEnd-pos], start) {
					return nil
				}
				lineEnd = start
				continue
			}
		}
		if pos == 0 {
			fn(buf[:lineEnd], 0)
			return nil
		}
		newPos := max(0, pos-chunk)
		more := make([]byte, lineEnd-newPos)
		if _, err := f.ReadAt(more[:pos-newPos], newPos); err != nil {
			return fmt.Errorf("read at %d: %w", newPos, err)
		}
		copy(more[pos-newPos:], buf[:lineEnd-pos])
		buf, pos = more, newPos
	}
	return nil
}
