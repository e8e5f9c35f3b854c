package crilog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriterSplitting(t *testing.T) {
	const max = 8
	a := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name   string
		writes []string
		close  bool // close the stream before reading
		want   []string
	}{
		{name: "lines", writes: []string{"one\ntwo\n"}, want: []string{"stdout F one", "stdout F two"}},
		{name: "empty lines", writes: []string{"\n\nx\n\n"}, want: []string{"stdout F ", "stdout F ", "stdout F x", "stdout F "}},
		{name: "line joined across writes", writes: []string{"he", "ll", "o\nwor", "ld\n"}, want: []string{"stdout F hello", "stdout F world"}},
		{name: "exactly max is one full entry", writes: []string{a(max) + "\n"}, want: []string{"stdout F " + a(max)}},
		{name: "max plus one", writes: []string{a(max+1) + "\n"}, want: []string{"stdout P " + a(max), "stdout F a"}},
		{name: "twice max", writes: []string{a(2*max) + "\n"}, want: []string{"stdout P " + a(max), "stdout F " + a(max)}},
		{name: "long line in pieces", writes: []string{a(5), a(5), a(5), a(5) + "\n"},
			want: []string{"stdout P " + a(max), "stdout P " + a(max), "stdout F " + a(4)}},
		{name: "CRLF ending stripped like containerd", writes: []string{"dos\r\n"}, want: []string{"stdout F dos"}},
		{name: "CR inside kept", writes: []string{"a\rb\r\r\n"}, want: []string{"stdout F a\rb\r"}},
		{name: "lone CR line", writes: []string{"\r\n"}, want: []string{"stdout F "}},
		{name: "CRLF straddling writes", writes: []string{"dos\r", "\n"}, want: []string{"stdout F dos"}},
		{name: "CRLF after exactly max bytes", writes: []string{a(max) + "\r", "\n"}, want: []string{"stdout F " + a(max)}},
		{name: "CR after max bytes is content", writes: []string{a(max) + "\r", "b\n"}, want: []string{"stdout P " + a(max), "stdout F \rb"}},
		{name: "pending partial kept until close", writes: []string{"pending"}, want: nil},
		{name: "final partial line on close", writes: []string{"x\npending"}, close: true,
			want: []string{"stdout F x", "stdout P pending"}},
		{name: "final long partial on close", writes: []string{a(max + 3)}, close: true,
			want: []string{"stdout P " + a(max), "stdout P aaa"}},
		{name: "final CR on close stays", writes: []string{a(max) + "\r"}, close: true,
			want: []string{"stdout P " + a(max), "stdout P \r"}},
		{name: "close with nothing pending", writes: []string{"x\n"}, close: true, want: []string{"stdout F x"}},
		{name: "unicode split by bytes", writes: []string{"ééééé\n"}, want: []string{"stdout P éééé", "stdout F é"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/c/0.log"
			w, err := NewWriter(path, WithMaxLineSize(max), WithClock(fakeClock(t0, 1)))
			require.NoError(t, err)
			s := w.Stream(Stdout)
			for _, p := range tc.writes {
				n, err := s.Write([]byte(p))
				require.NoError(t, err)
				require.Equal(t, len(p), n)
			}
			if tc.close {
				require.NoError(t, s.Close())
			}
			got := describe(readEntries(t, path))
			if len(tc.want) == 0 {
				assert.Empty(t, got)
			} else {
				assert.Equal(t, tc.want, got)
			}
			require.NoError(t, w.Close())
		})
	}
}

// TestWriterSplittingIndependentOfChunking checks that the entries depend
// only on the bytes, not on how they were cut into writes.
func TestWriterSplittingIndependentOfChunking(t *testing.T) {
	input := "short\n" + strings.Repeat("x", 50) + "\r\n\n" + strings.Repeat("y", 17) + "\r\r\nend\r" + "\n" + strings.Repeat("z", 33)
	var reference []string
	for _, chunk := range []int{len(input), 1, 2, 3, 7, 16, 17} {
		path := t.TempDir() + "/0.log"
		w, err := NewWriter(path, WithMaxLineSize(16))
		require.NoError(t, err)
		s := w.Stream(Stderr)
		for rest := input; len(rest) > 0; {
			n := min(chunk, len(rest))
			_, err := s.Write([]byte(rest[:n]))
			require.NoError(t, err)
			rest = rest[n:]
		}
		require.NoError(t, w.Close()) // flushes the open stream
		got := describe(readEntries(t, path))
		if reference == nil {
			reference = got
			require.Equal(t, "stderr P "+strings.Repeat("z", 16), got[len(got)-3])
			require.Equal(t, "stderr P z", got[len(got)-1])
			continue
		}
		assert.Equal(t, reference, got, "chunk size %d", chunk)
	}
}

func TestStreamErrors(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path)
	require.NoError(t, err)

	_, err = w.Stream("stdin").Write([]byte("x\n"))
	require.ErrorIs(t, err, ErrInvalidStream)

	s := w.Stream(Stdout)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is fine")
	_, err = s.Write([]byte("x\n"))
	require.ErrorIs(t, err, ErrClosed)

	open := w.Stream(Stderr)
	_, err = open.Write([]byte("pending"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "closing twice is fine")
	_, err = open.Write([]byte("x\n"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = w.Stream(Stdout).Write([]byte("x\n"))
	require.ErrorIs(t, err, ErrClosed)

	assert.Equal(t, []string{"stderr P pending"}, describe(readEntries(t, path)), "Close flushed the open stream")
}
