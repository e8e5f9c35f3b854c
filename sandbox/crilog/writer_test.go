package crilog

import (
	"bytes"
	"fmt"
	"github.com/podkit/podkit/internal/testutil"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewWriterOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     Option
		wantErr string
	}{
		{name: "max size zero disables rotation", opt: WithMaxSize(0)},
		{name: "negative max size", opt: WithMaxSize(-1), wantErr: "max size -1"},
		{name: "max files 2", opt: WithMaxFiles(2)},
		{name: "max files 1", opt: WithMaxFiles(1), wantErr: "max files 1"},
		{name: "max files 0", opt: WithMaxFiles(0), wantErr: "max files 0"},
		{name: "max line size 1", opt: WithMaxLineSize(1)},
		{name: "max line size 0", opt: WithMaxLineSize(0), wantErr: "max line size 0"},
		{name: "nil clock", opt: WithClock(nil), wantErr: "nil clock"},
		{name: "nil logger", opt: WithLogger(nil), wantErr: "nil logger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(t.TempDir()+"/0.log", tc.opt)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, w.Close())
		})
	}
	_, err := NewWriter("")
	require.ErrorContains(t, err, "empty log path")
}

func TestNewWriterCreatesAndAppends(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ns_pod_uid", "ctr", "0.log")
	w, err := NewWriter(path, WithClock(fakeClock(t0, time.Millisecond)))
	require.NoError(t, err)
	assert.Equal(t, path, w.Path())
	_, err = w.Stream(Stdout).Write([]byte("first\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	old := syscall.Umask(0)
	syscall.Umask(old)
	st, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755)&^os.FileMode(old), st.Mode().Perm())
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640)&^os.FileMode(old), st.Mode().Perm())

	// A new Writer (a restarted supervisor) appends.
	w, err = NewWriter(path)
	require.NoError(t, err)
	_, err = w.Stream(Stderr).Write([]byte("second\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, []string{"stdout F first", "stderr F second"}, describe(readEntries(t, path)))
}

func TestNewWriterRepairsTruncatedLastLine(t *testing.T) {
	path := t.TempDir() + "/0.log"
	require.NoError(t, os.WriteFile(path, []byte(criLines(t0, "stdout F ok")+"2024-03-01T12:00:01Z stdout F cut sho"), 0o640))
	w, err := NewWriter(path)
	require.NoError(t, err)
	_, err = w.Stream(Stdout).Write([]byte("after\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	require.Len(t, lines, 3)
	e, err := ParseLine(lines[2])
	require.NoError(t, err)
	assert.Equal(t, "stdout F after", entryOf(e), "the new entry starts a line of its own")
}

func TestWriterTimestamps(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path, WithClock(fakeClock(t0, time.Microsecond)), WithMaxLineSize(4))
	require.NoError(t, err)
	_, err = w.Stream(Stdout).Write([]byte("12345678\nx\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	es := readEntries(t, path)
	require.Len(t, es, 3)
	for i, e := range es {
		assert.True(t, e.Time.Equal(t0.Add(time.Duration(i)*time.Microsecond)), "entry %d at %s", i, e.Time)
	}
}

// TestWriterIOErrorsDoNotFailWrite writes to /dev/full: every write fails
// with ENOSPC, yet the stream keeps accepting output (the container must
// not block) and Close reports the error.
func TestWriterIOErrorsDoNotFailWrite(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		testutil.SkipOrFail(t, "no /dev/full: %v", err)
	}
	w, err := NewWriter("/dev/full", WithMaxSize(0))
	require.NoError(t, err)
	s := w.Stream(Stdout)
	for range 3 {
		n, err := s.Write([]byte("lost\n"))
		require.NoError(t, err)
		require.Equal(t, 5, n)
	}
	err = w.Close()
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorContains(t, err, "/dev/full")
}

// TestWriterConcurrentStreams writes through several streams at once (run
// with -race): entries are never interleaved with another's bytes, times
// go forward in file order, and each stream's lines come back in order.
func TestWriterConcurrentStreams(t *testing.T) {
	const max = 64
	line := func(g, i int) string {
		return fmt.Sprintf("g%d-%d-%s", g, i, bytes.Repeat([]byte{'a' + byte(g)}, (i*7)%150))
	}
	short := func(g, i int) string {
		return fmt.Sprintf("g%d-%d-%s", g, i, bytes.Repeat([]byte{'a' + byte(g)}, i%40))
	}
	run := func(t *testing.T, streams []Stream, lines int, text func(g, i int) string) []Entry {
		path := t.TempDir() + "/0.log"
		w, err := NewWriter(path, WithMaxLineSize(max), WithMaxSize(0))
		require.NoError(t, err)
		var wg sync.WaitGroup
		for g, stream := range streams {
			s := w.Stream(stream)
			wg.Go(func() {
				defer s.Close()
				for i := range lines {
					// Each line in two writes, to exercise pending data.
					l := text(g, i) + "\n"
					half := len(l) / 2
					if _, err := s.Write([]byte(l[:half])); err != nil {
						t.Error(err)
					}
					if _, err := s.Write([]byte(l[half:])); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, w.Close())
		es := readEntries(t, path)
		var last time.Time
		for _, e := range es {
			require.False(t, e.Time.Before(last), "times go forward in file order")
			last = e.Time
			require.LessOrEqual(t, len(e.Content), max)
		}
		return es
	}

	t.Run("one writer per stream, long lines joined back", func(t *testing.T) {
		const lines = 500
		es := run(t, []Stream{Stdout, Stderr}, lines, line)
		got := map[Stream][]string{}
		cur := map[Stream]*bytes.Buffer{Stdout: {}, Stderr: {}}
		for _, e := range es {
			cur[e.Stream].Write(e.Content)
			if !e.Partial {
				got[e.Stream] = append(got[e.Stream], cur[e.Stream].String())
				cur[e.Stream].Reset()
			}
		}
		for g, s := range []Stream{Stdout, Stderr} {
			require.Len(t, got[s], lines)
			for i, l := range got[s] {
				require.Equal(t, line(g, i), l)
			}
		}
	})

	t.Run("many writers per stream, whole entries", func(t *testing.T) {
		const lines = 300
		streams := []Stream{Stdout, Stderr, Stdout, Stderr, Stdout, Stderr, Stdout, Stderr}
		es := run(t, streams, lines, short)
		next := make([]int, len(streams))
		for _, e := range es {
			require.False(t, e.Partial)
			var g, i int
			_, err := fmt.Sscanf(string(e.Content), "g%d-%d-", &g, &i)
			require.NoError(t, err, "entry %q", e.Content)
			require.Equal(t, streams[g], e.Stream)
			require.Equal(t, next[g], i, "writer %d's lines in order", g)
			require.Equal(t, short(g, i), string(e.Content))
			next[g]++
		}
		for g := range streams {
			require.Equal(t, lines, next[g])
		}
	})
}
