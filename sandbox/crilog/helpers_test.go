package crilog

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is the fake clock's start.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock returns a clock that advances by step on every call.
func fakeClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := now
		now = now.Add(step)
		return t
	}
}

// entryOf is a short entry description for comparisons: "stdout F text".
func entryOf(e Entry) string {
	tag := "F"
	if e.Partial {
		tag = "P"
	}
	return string(e.Stream) + " " + tag + " " + string(e.Content)
}

// readEntries parses every line of the file at path.
func readEntries(t *testing.T, path string) []Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []Entry
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		require.Equal(t, byte('\n'), line[len(line)-1], "line %q not terminated", line)
		e, err := ParseLine(line)
		require.NoError(t, err, "line %q", line)
		e.Content = append([]byte(nil), e.Content...)
		out = append(out, e)
	}
	return out
}

// describe turns entries into entryOf strings.
func describe(es []Entry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, entryOf(e))
	}
	return out
}

// writeLog writes raw CRI lines ("stdout F text", times from the fake
// clock) to a new file and returns its path.
func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	path := t.TempDir() + "/0.log"
	require.NoError(t, os.WriteFile(path, []byte(criLines(t0, lines...)), 0o640))
	return path
}

// criLines formats "stream tag content" descriptions as CRI lines, one
// second apart from start.
func criLines(start time.Time, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(start.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano))
		b.WriteByte(' ')
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for a follower writing into it while
// the test waits for content.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor blocks until the buffer holds want. The guard only turns a hang
// into a failure; nothing asserts how long it took.
func (b *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	for !strings.Contains(b.String(), want) {
		select {
		case <-b.changed:
		case <-guard.C:
			t.Fatalf("follower never wrote %q; got %q", want, b.String())
		}
	}
}

// appendRaw appends text to the file at path.
func appendRaw(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
