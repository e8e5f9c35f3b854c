package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream names the container stream an entry came from.
type Stream string

// The two streams of the CRI log format.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// valid reports whether s is Stdout or Stderr.
func (s Stream) valid() bool { return s == Stdout || s == Stderr }

// index maps Stdout to 0 and Stderr to 1 for per-stream state arrays.
func (s Stream) index() int {
	if s == Stderr {
		return 1
	}
	return 0
}

// Sentinel errors, for errors.Is.
var (
	// ErrMalformed is wrapped by ParseLine for a line that is not a CRI
	// log entry.
	ErrMalformed = errors.New("malformed CRI log line")
	// ErrInvalidStream is wrapped when a Stream other than Stdout or
	// Stderr (or "" where "both" is meant) is used.
	ErrInvalidStream = errors.New("invalid log stream")
	// ErrClosed is returned by writes after the stream or its Writer was
	// closed.
	ErrClosed = errors.New("crilog writer closed")
)

// Tags of the CRI log format. A tag field is a ':'-separated list whose
// first element is the partial/full tag (CRI's LogTagDelimiter); later
// elements are ignored for forward compatibility, as the kubelet does.
const (
	tagPartial = 'P'
	tagFull    = 'F'
	tagSep     = ':'
)

// timeFormat is the timestamp format of the file: RFC 3339 with
// nanoseconds, trailing zeros trimmed (as containerd writes it).
const timeFormat = time.RFC3339Nano

// timeFormatOut is the fixed-width RFC 3339 format the kubelet uses for
// the prefix of `kubectl logs --timestamps` (types.RFC3339NanoFixed).
const timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

// Entry is one line of a CRI log file:
//
//	<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n
//
// A logical output line longer than the writer's maximum line size, or
// cut short by the end of the stream, is stored as one or more partial (P)
// entries; a full (F) entry ends the line. The newline that ended the
// container's line is not part of Content: F implies it.
type Entry struct {
	Time    time.Time
	Stream  Stream
	Partial bool
	Content []byte
}

// ParseLine parses one CRI log line, with or without its trailing '\n'.
// Content aliases line. Errors wrap ErrMalformed and say which field is
// wrong.
func ParseLine(line []byte) (Entry, error) {
	var e Entry
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	field, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return e, fmt.Errorf("%w: no space after the timestamp in %q", ErrMalformed, clip(line))
	}
	t, err := time.Parse(timeFormat, string(field))
	if err != nil {
		return e, fmt.Errorf("%w: timestamp %q is not RFC 3339: %v", ErrMalformed, clip(field), err)
	}
	e.Time = t

	field, rest, ok = bytes.Cut(rest, []byte{' '})
	if !ok {
		return e, fmt.Errorf("%w: no space after the stream in %q", ErrMalformed, clip(line))
	}
	switch Stream(field) {
	case Stdout:
		e.Stream = Stdout
	case Stderr:
		e.Stream = Stderr
	default:
		return e, fmt.Errorf("%w: stream %q is neither stdout nor stderr", ErrMalformed, clip(field))
	}

	field, rest, ok = bytes.Cut(rest, []byte{' '})
	if !ok {
		return e, fmt.Errorf("%w: no space after the tag in %q", ErrMalformed, clip(line))
	}
	tag, _, _ := bytes.Cut(field, []byte{tagSep})
	switch {
	case len(tag) == 1 && tag[0] == tagPartial:
		e.Partial = true
	case len(tag) == 1 && tag[0] == tagFull:
	default:
		return e, fmt.Errorf("%w: tag %q is neither P nor F", ErrMalformed, clip(field))
	}
	e.Content = rest
	return e, nil
}

// Append appends e as a CRI log line, with its trailing '\n', to dst. It
// is the inverse of ParseLine for a Content without '\n'.
func (e Entry) Append(dst []byte) []byte {
	dst = e.Time.AppendFormat(dst, timeFormat)
	dst = append(dst, ' ')
	dst = append(dst, e.Stream...)
	if e.Partial {
		dst = append(dst, ' ', tagPartial, ' ')
	} else {
		dst = append(dst, ' ', tagFull, ' ')
	}
	dst = append(dst, e.Content...)
	return append(dst, '\n')
}

// clip shortens b for error messages.
func clip(b []byte) []byte {
	const max = 64
	if len(b) > max {
		return b[:max]
	}
	return b
}
