package crilog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadLogs(t *testing.T) {
	ts := func(sec int) string { return t0.Add(time.Duration(sec)*time.Second).Format(timeFormatOut) + " " }
	all := ReadOptions{TailLines: -1}
	interleaved := []string{"stdout P x1", "stderr F e1", "stdout F x2", "stderr F e2"}
	for _, tc := range []struct {
		name      string
		lines     []string
		raw       string // appended verbatim after lines
		opts      ReadOptions
		wantOut   string
		wantErr   string
		nilStderr bool
	}{
		{name: "both streams", lines: []string{"stdout F a", "stderr F b", "stdout F c"}, opts: all, wantOut: "a\nc\n", wantErr: "b\n"},
		{name: "empty lines", lines: []string{"stdout F ", "stdout F  "}, opts: all, wantOut: "\n \n"},
		{name: "partials joined", lines: []string{"stdout P hel", "stdout P lo ", "stdout F world"}, opts: all, wantOut: "hello world\n"},
		{name: "partials interleaved with the other stream", lines: interleaved, opts: all, wantOut: "x1x2\n", wantErr: "e1\ne2\n"},
		{name: "timestamps of a line's first entry, fixed width", lines: []string{"stdout P ab", "stderr F e", "stdout F cd"},
			opts: ReadOptions{TailLines: -1, Timestamps: true}, wantOut: ts(0) + "abcd\n", wantErr: ts(1) + "e\n"},
		{name: "tail counts lines not entries", lines: []string{"stdout F l1", "stdout P l2a", "stdout P l2b", "stdout F l2c", "stdout F l3"},
			opts: ReadOptions{TailLines: 2}, wantOut: "l2al2bl2c\nl3\n"},
		{name: "tail 1 interleaved", lines: interleaved, opts: ReadOptions{TailLines: 1}, wantErr: "e2\n"},
		{name: "tail 2 interleaved keeps the split line whole", lines: interleaved, opts: ReadOptions{TailLines: 2}, wantOut: "x1x2\n", wantErr: "e2\n"},
		{name: "tail 3 interleaved", lines: interleaved, opts: ReadOptions{TailLines: 3}, wantOut: "x1x2\n", wantErr: "e1\ne2\n"},
		{name: "tail 0", lines: interleaved, opts: ReadOptions{TailLines: 0}},
		{name: "tail beyond the file", lines: interleaved, opts: ReadOptions{TailLines: 100}, wantOut: "x1x2\n", wantErr: "e1\ne2\n"},
		{name: "tail of stdout only", lines: append(interleaved, "stderr F e3"), opts: ReadOptions{TailLines: 1, Stream: Stdout}, wantOut: "x1x2\n"},
		{name: "tail of stderr only", lines: interleaved, opts: ReadOptions{TailLines: 1, Stream: Stderr}, wantErr: "e2\n"},
		{name: "unfinished last line written without newline", lines: []string{"stdout F a", "stdout P b", "stdout P c"}, opts: all, wantOut: "a\nbc"},
		{name: "unfinished last line counts as a line", lines: []string{"stdout F a", "stdout P b", "stdout P c"}, opts: ReadOptions{TailLines: 1}, wantOut: "bc"},
		{name: "since keeps lines from then", lines: []string{"stdout F a", "stdout F b", "stdout F c"},
			opts: ReadOptions{TailLines: -1, Since: t0.Add(time.Second)}, wantOut: "b\nc\n"},
		{name: "since decides by a line's first entry", lines: []string{"stdout P a1", "stdout F a2", "stdout P b1", "stdout F b2"},
			opts: ReadOptions{TailLines: -1, Since: t0.Add(time.Second)}, wantOut: "b1b2\n"},
		{name: "since after everything", lines: []string{"stdout F a"}, opts: ReadOptions{TailLines: -1, Since: t0.Add(time.Hour)}},
		{name: "tail then since", lines: []string{"stdout F a", "stdout F b", "stdout F c"},
			opts: ReadOptions{TailLines: 2, Since: t0.Add(2 * time.Second)}, wantOut: "c\n"},
		{name: "limit bytes cuts a line", lines: []string{"stdout F hello", "stdout F world"}, opts: ReadOptions{TailLines: -1, LimitBytes: 8}, wantOut: "hello\nwo"},
		{name: "limit bytes exact", lines: []string{"stdout F hello", "stdout F world"}, opts: ReadOptions{TailLines: -1, LimitBytes: 6}, wantOut: "hello\n"},
		{name: "limit bytes counts both streams", lines: []string{"stdout F aa", "stderr F bb", "stdout F cc"}, opts: ReadOptions{TailLines: -1, LimitBytes: 7}, wantOut: "aa\nc", wantErr: "bb\n"},
		{name: "limit bytes counts prefixes", lines: []string{"stdout F hello"}, opts: ReadOptions{TailLines: -1, LimitBytes: 10, Timestamps: true}, wantOut: ts(0)[:10]},
		{name: "stream stdout", lines: interleaved, opts: ReadOptions{TailLines: -1, Stream: Stdout}, wantOut: "x1x2\n"},
		{name: "stream stderr", lines: interleaved, opts: ReadOptions{TailLines: -1, Stream: Stderr}, wantErr: "e1\ne2\n"},
		{name: "limit bytes of the selected stream only", lines: []string{"stderr F bb", "stdout F aa"}, opts: ReadOptions{TailLines: -1, LimitBytes: 2, Stream: Stdout}, wantOut: "aa"},
		{name: "nil writer drops its stream", lines: interleaved, opts: all, nilStderr: true, wantOut: "x1x2\n"},
		{name: "malformed lines skipped", lines: []string{"stdout F a", "stdin F nope", "stdout X nope", "stdout F b"}, raw: "garbage\n", opts: all, wantOut: "a\nb\n"},
		{name: "malformed lines not counted by tail", lines: []string{"stdout F a", "stdout F b"}, raw: "garbage\n", opts: ReadOptions{TailLines: 1}, wantOut: "b\n"},
		{name: "incomplete last line not written", lines: []string{"stdout F a"}, raw: t0.Format(time.RFC3339Nano) + " stdout F half", opts: all, wantOut: "a\n"},
		{name: "incomplete last line not counted by tail", lines: []string{"stdout F a"}, raw: t0.Format(time.RFC3339Nano) + " stdout F half", opts: ReadOptions{TailLines: 1}, wantOut: "a\n"},
		{name: "empty file", opts: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeLog(t, tc.lines...)
			if tc.raw != "" {
				appendRaw(t, path, tc.raw)
			}
			var stdout, stderr bytes.Buffer
			var errw io.Writer = &stderr
			if tc.nilStderr {
				errw = nil
			}
			require.NoError(t, ReadLogs(context.Background(), path, tc.opts, &stdout, errw))
			assert.Equal(t, tc.wantOut, stdout.String(), "stdout")
			assert.Equal(t, tc.wantErr, stderr.String(), "stderr")
		})
	}
}

func TestReadLogsErrors(t *testing.T) {
	path := writeLog(t, "stdout F a")
	ctx := context.Background()
	var out bytes.Buffer
	err := ReadLogs(ctx, path, ReadOptions{Stream: "stdin"}, &out, &out)
	require.ErrorIs(t, err, ErrInvalidStream)
	err = ReadLogs(ctx, path, ReadOptions{PollInterval: -1}, &out, &out)
	require.ErrorContains(t, err, "negative poll interval")
	err = ReadLogs(ctx, path+".missing", ReadOptions{}, &out, &out)
	require.ErrorIs(t, err, os.ErrNotExist)
	err = ReadLogs(ctx, path, ReadOptions{TailLines: -1}, &out, failWriter{})
	require.NoError(t, err, "stderr is not written")
	err = ReadLogs(ctx, path, ReadOptions{TailLines: -1}, failWriter{}, &out)
	require.ErrorIs(t, err, os.ErrPermission)
	require.ErrorContains(t, err, path)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrPermission }

// TestReadLogsTailMatchesFullRead writes random lines through a Writer
// with a small maximum line size (many P entries) and checks that the last
// n lines of a full read are what TailLines n gives, for files spanning
// several of the tail scanner's chunks.
func TestReadLogsTailMatchesFullRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path, WithMaxLineSize(100), WithMaxSize(0))
	require.NoError(t, err)
	s := w.Stream(Stdout)
	for i := range 3000 {
		n := rng.IntN(300)
		if i == 2990 {
			n = 100 << 10 // one line longer than a scanner chunk
		}
		_, err := fmt.Fprintf(s, "%d:%s\n", i, strings.Repeat("x", n))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())

	var full bytes.Buffer
	require.NoError(t, ReadLogs(context.Background(), path, ReadOptions{TailLines: -1}, &full, nil))
	lines := strings.SplitAfter(full.String(), "\n")
	lines = lines[:len(lines)-1]
	require.Len(t, lines, 3000)
	for _, n := range []int{0, 1, 2, 9, 10, 11, 500, 2999, 3000, 4000} {
		var got bytes.Buffer
		require.NoError(t, ReadLogs(context.Background(), path, ReadOptions{TailLines: int64(n)}, &got, nil))
		want := strings.Join(lines[max(0, len(lines)-n):], "")
		require.Equal(t, want, got.String(), "tail %d", n)
	}
}
