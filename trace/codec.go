package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrMalformed wraps the errors of Decode.
var ErrMalformed = errors.New("malformed birth trace")

// Encode renders t in the annotation's format, offsets from its earliest
// step. An empty trace encodes with the zero time.
func Encode(t *Trace) string {
	var t0 time.Time
	for i, s := range t.Steps {
		if i == 0 || s.At.Before(t0) {
			t0 = s.At
		}
	}
	b := make([]byte, 0, 48+24*len(t.Steps))
	b = append(b, `{"t0":`...)
	b = strconv.AppendQuote(b, t0.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"s":[`...)
	for i, s := range t.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStep(b, s.Name, s.At.Sub(t0), s.Detail)
	}
	return string(append(b, "]}"...))
}

func appendStep(b []byte, name string, off time.Duration, detail string) []byte {
	b = append(b, '[')
	b = appendString(b, name)
	b = append(b, ',')
	b = strconv.AppendInt(b, off.Microseconds(), 10)
	if detail != "" {
		b = append(b, ',')
		b = appendString(b, detail)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

type wire struct {
	T0    string              `json:"t0"`
	Steps [][]json.RawMessage `json:"s"`
}

// Decode parses an annotation value.
func Decode(v string) (*Trace, error) {
	var w wire
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	t0, err := time.Parse(time.RFC3339Nano, w.T0)
	if err != nil {
		return nil, fmt.Errorf("%w: t0: %w", ErrMalformed, err)
	}
	t := &Trace{Steps: make([]Step, 0, len(w.Steps))}
	for i, raw := range w.Steps {
		if len(raw) < 2 || len(raw) > 3 {
			return nil, fmt.Errorf("%w: step %d has %d fields, want 2 or 3", ErrMalformed, i, len(raw))
		}
		var s Step
		var us int64
		if err := json.Unmarshal(raw[0], &s.Name); err != nil || s.Name == "" {
			return nil, fmt.Errorf("%w: step %d: bad name %s", ErrMalformed, i, raw[0])
		}
		if err := json.Unmarshal(raw[1], &us); err != nil {
			return nil, fmt.Errorf("%w: step %s: bad offset %s", ErrMalformed, s.Name, raw[1])
		}
		if len(raw) == 3 {
			if err := json.Unmarshal(raw[2], &s.Detail); err != nil {
				return nil, fmt.Errorf("%w: step %s: bad detail %s", ErrMalformed, s.Name, raw[2])
			}
		}
		s.At = t0.Add(time.Duration(us) * time.Microsecond)
		t.Add(s.Name, s.At, s.Detail)
	}
	return t, nil
}

// Append adds a step to an encoded trace without decoding it when the
// value is in Encode's layout (the scheduler and the API server stamp
// every pod, so this is on their hot paths), and by decoding and encoding
// otherwise. A step already present leaves v unchanged.
func Append(v, name string, at time.Time, detail string) (string, error) {
	const head = `{"t0":"`
	end := strings.IndexByte(v[min(len(head), len(v)):], '"') + len(head)
	if !strings.HasPrefix(v, head) || end < len(head) || !strings.HasSuffix(v, "]}") ||
		strings.Contains(v, `"`+name+`"`) || strings.Contains(v, `\`) {
		return appendSlow(v, name, at, detail)
	}
	t0, err := time.Parse(time.RFC3339Nano, v[len(head):end])
	if err != nil {
		return appendSlow(v, name, at, detail)
	}
	b := make([]byte, 0, len(v)+len(name)+24+len(detail))
	b = append(b, v[:len(v)-2]...)
	if !strings.HasSuffix(v, "[]}") {
		b = append(b, ',')
	}
	b = appendStep(b, name, at.Sub(t0), detail)
	return string(append(b, "]}"...)), nil
}

func appendSlow(v, name string, at time.Time, detail string) (string, error) {
	t, err := Decode(v)
	if err != nil {
		return v, err
	}
	if t.Has(name) {
		return v, nil
	}
	t.Add(name, at, detail)
	return Encode(t), nil
}
