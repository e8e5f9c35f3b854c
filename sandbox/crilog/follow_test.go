package crilog

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// follower runs ReadLogs with Follow in the background.
type follower struct {
	out, err *syncBuffer
	cancel   context.CancelFunc
	done     chan struct{} // closed by finish: the container exited
	result   chan error
}

func startFollower(t *testing.T, path string, opts ReadOptions) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{out: newSyncBuffer(), err: newSyncBuffer(), cancel: cancel,
		done: make(chan struct{}), result: make(chan error, 1)}
	opts.Follow = true
	opts.Done = f.done
	go func() { f.result <- ReadLogs(ctx, path, opts, f.out, f.err) }()
	t.Cleanup(func() {
		cancel()
		<-f.result
	})
	return f
}

// wait returns ReadLogs's result; the guard only turns a hang into a
// failure.
func (f *follower) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.result:
		f.result <- err // for Cleanup
		return err
	case <-time.After(time.Minute):
		t.Fatal("follower did not return")
		return nil
	}
}

// finish closes Done and waits for the follower to drain and return nil.
func (f *follower) finish(t *testing.T) {
	t.Helper()
	close(f.done)
	require.NoError(t, f.wait(t))
}

func lines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line-%04d\n", i)
	}
	return b.String()
}

func TestFollowPicksUpAppendedLines(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path)
	require.NoError(t, err)
	defer w.Close()
	out, errs := w.Stream(Stdout), w.Stream(Stderr)
	_, err = out.Write([]byte("before\n"))
	require.NoError(t, err)

	f := startFollower(t, path, ReadOptions{TailLines: -1, PollInterval: time.Millisecond})
	f.out.waitFor(t, "before\n")
	_, err = out.Write([]byte("after 1\n"))
	require.NoError(t, err)
	f.out.waitFor(t, "before\nafter 1\n")
	_, err = errs.Write([]byte("oops\n"))
	require.NoError(t, err)
	f.err.waitFor(t, "oops\n")
	// A line written in pieces comes out once it is complete.
	_, err = out.Write([]byte("after "))
	require.NoError(t, err)
	_, err = out.Write([]byte("2\n"))
	require.NoError(t, err)
	f.out.waitFor(t, "after 1\nafter 2\n")

	f.cancel()
	require.ErrorIs(t, f.wait(t), context.Canceled)
	assert.Equal(t, "before\nafter 1\nafter 2\n", f.out.String())
	assert.Equal(t, "oops\n", f.err.String())
}

// TestFollowAcrossRotation follows while the writer rotates every two
// lines, waiting for each line so that the follower meets every rotation.
func TestFollowAcrossRotation(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path, WithMaxSize(2*entrySize), WithMaxFiles(3), WithClock(fakeClock(t0, time.Second)))
	require.NoError(t, err)
	s := w.Stream(Stdout)
	f := startFollower(t, path, ReadOptions{TailLines: -1, PollInterval: time.Millisecond})
	for i := range 12 {
		_, err := fmt.Fprintf(s, "line-%04d\n", i)
		require.NoError(t, err)
		f.out.waitFor(t, lines(0, i+1))
	}
	rotated, err := RotatedFiles(path)
	require.NoError(t, err)
	require.Len(t, rotated, 2, "the writer did rotate")
	require.NoError(t, w.Close())
	f.finish(t)
	assert.Equal(t, lines(0, 12), f.out.String())
}

// TestFollowManyRotationsBetweenPolls rotates several times while the
// follower sleeps (a poll interval of an hour): on Done it drains the old
// file, every file rotated since, and the new one, in order.
func TestFollowManyRotationsBetweenPolls(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path, WithMaxSize(2*entrySize), WithMaxFiles(20), WithClock(fakeClock(t0, time.Second)))
	require.NoError(t, err)
	s := w.Stream(Stdout)
	_, err = fmt.Fprint(s, lines(0, 1))
	require.NoError(t, err)
	f := startFollower(t, path, ReadOptions{TailLines: -1, PollInterval: time.Hour})
	f.out.waitFor(t, lines(0, 1)) // the follower holds the first file
	_, err = fmt.Fprint(s, lines(1, 15))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	rotated, err := RotatedFiles(path)
	require.NoError(t, err)
	require.Len(t, rotated, 7)
	f.finish(t)
	assert.Equal(t, lines(0, 15), f.out.String())
}

// TestFollowJoinsLineSplitByRotation checks a line whose first P entry
// went to the old file and whose other entries went to the new one.
func TestFollowJoinsLineSplitByRotation(t *testing.T) {
	path := t.TempDir() + "/0.log"
	// "F one" takes 34 bytes, "P abcd" 35: the next entry rotates.
	w, err := NewWriter(path, WithMaxLineSize(4), WithMaxSize(70), WithClock(fakeClock(t0, time.Second)))
	require.NoError(t, err)
	s := w.Stream(Stdout)
	_, err = s.Write([]byte("one\n"))
	require.NoError(t, err)
	f := startFollower(t, path, ReadOptions{TailLines: -1, Timestamps: true, PollInterval: time.Hour})
	f.out.waitFor(t, "one\n") // the follower holds the first file
	_, err = s.Write([]byte("abcdefghij\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, []string{"stdout P efgh", "stdout F ij"}, describe(readEntries(t, path)), "the line is split by the rotation")
	f.finish(t)
	assert.Equal(t, t0.Format(timeFormatOut)+" one\n"+t0.Add(time.Second).Format(timeFormatOut)+" abcdefghij\n", f.out.String())
}

func TestFollowDoneDrainsTheRest(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path)
	require.NoError(t, err)
	s := w.Stream(Stdout)
	_, err = s.Write([]byte("first\n"))
	require.NoError(t, err)
	f := startFollower(t, path, ReadOptions{TailLines: -1, PollInterval: time.Hour})
	f.out.waitFor(t, "first\n")
	_, err = s.Write([]byte("second\nno newline at exit"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f.finish(t)
	assert.Equal(t, "first\nsecond\nno newline at exit", f.out.String())
}

func TestFollowAlreadyDone(t *testing.T) {
	path := writeLog(t, "stdout F a", "stdout F b")
	done := make(chan struct{})
	close(done)
	var out strings.Builder
	err := ReadLogs(context.Background(), path, ReadOptions{Follow: true, TailLines: 1, Done: done}, &out, nil)
	require.NoError(t, err)
	assert.Equal(t, "b\n", out.String())
}

func TestFollowLimitBytesEnds(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path)
	require.NoError(t, err)
	defer w.Close()
	s := w.Stream(Stdout)
	f := startFollower(t, path, ReadOptions{TailLines: -1, LimitBytes: 10, PollInterval: time.Millisecond})
	_, err = s.Write([]byte("12345\n"))
	require.NoError(t, err)
	f.out.waitFor(t, "12345\n")
	_, err = s.Write([]byte("67890\n"))
	require.NoError(t, err)
	require.NoError(t, f.wait(t), "the limit ends a follow without error")
	assert.Equal(t, "12345\n6789", f.out.String())
}

func TestFollowTruncation(t *testing.T) {
	path := writeLog(t, "stdout F a long line before the truncation", "stdout F another long line")
	f := startFollower(t, path, ReadOptions{TailLines: -1, PollInterval: time.Millisecond})
	f.out.waitFor(t, "another long line\n")
	// copytruncate: same file, emptied, then shorter new content.
	require.NoError(t, os.Truncate(path, 0))
	appendRaw(t, path, criLines(t0.Add(time.Hour), "stdout F new"))
	f.out.waitFor(t, "another long line\nnew\n")
	f.finish(t)
}

// TestFollowTailSkipsRestOfUnselectedLine starts after a stdout line that
// is unfinished and not among the tail: its F entry must not show up as a
// line of its own.
func TestFollowTailSkipsRestOfUnselectedLine(t *testing.T) {
	path := writeLog(t, "stdout P unfinished-", "stderr F e1")
	f := startFollower(t, path, ReadOptions{TailLines: 1, PollInterval: time.Millisecond})
	f.err.waitFor(t, "e1\n")
	appendRaw(t, path, criLines(t0.Add(time.Minute), "stdout F rest", "stdout F next"))
	f.out.waitFor(t, "next\n")
	f.finish(t)
	assert.Equal(t, "next\n", f.out.String())
	assert.Equal(t, "e1\n", f.err.String())
}

func TestFollowWaitsForMissingFile(t *testing.T) {
	path := t.TempDir() + "/0.log"
	w, err := NewWriter(path)
	require.NoError(t, err)
	_, err = w.Stream(Stdout).Write([]byte("a\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f := startFollower(t, path, ReadOptions{TailLines: -1, PollInterval: time.Millisecond})
	f.out.waitFor(t, "a\n")
	// The log removed (container removed): the follower keeps waiting
	// without error until Done.
	require.NoError(t, os.Remove(path))
	f.finish(t)
	assert.Equal(t, "a\n", f.out.String())
}

// TestRotationDrainsOldFileFirst covers the window between the follower's
// last read and its rotation check: what the writer appended to the old
// file before renaming it is still written, before the new file.
func TestRotationDrainsOldFileFirst(t *testing.T) {
	path := writeLog(t, "stdout F a")
	fh, err := os.Open(path)
	require.NoError(t, err)
	var out strings.Builder
	opts := &ReadOptions{TailLines: -1, Logger: discardLogger()}
	rd := &reader{path: path, f: fh, lr: newLineReader(fh, 0), out: newRenderer(opts, &out, nil), opts: opts}
	defer func() { rd.f.Close() }()
	require.NoError(t, rd.drain())
	require.Equal(t, "a\n", out.String())

	appendRaw(t, path, criLines(t0.Add(time.Second), "stdout F b"))
	require.NoError(t, os.Rename(path, path+".20240301-120001"))
	require.NoError(t, os.WriteFile(path, []byte(criLines(t0.Add(2*time.Second), "stdout F c")), 0o640))

	moved, err := rd.checkFile()
	require.NoError(t, err)
	require.True(t, moved)
	require.NoError(t, rd.drain())
	assert.Equal(t, "a\nb\nc\n", out.String())
}
