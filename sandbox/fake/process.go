package fake

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/internal/regfile"
	"github.com/podkit/podkit/sandbox"
)

// exitKilled is the status of a process killed by SIGKILL (128+9).
const exitKilled = 137

// LogLine is one line a container printed.
type LogLine struct {
	Time time.Time
	// Stream is "stdout" or "stderr".
	Stream string
	Text   string
}

func reasonFor(code int32) string {
	if code == 0 {
		return sandbox.ReasonCompleted
	}
	return sandbox.ReasonError
}

// exitLocked ends a Created or Running container. It returns the
// container's timer, which the caller stops once the lock is released.
func (s *state) exitLocked(c *containerRec, at time.Time, code int32, reason string) clock.Timer {
	c.st.State = sandbox.ContainerStateExited
	c.st.FinishedAt = at
	c.st.ExitCode = code
	c.st.Reason = reason
	c.st.PID = 0
	if c.done != nil {
		close(c.done)
	}
	s.emitLocked(c, sandbox.ContainerStopped, at)
	t := c.timer
	c.timer = nil
	return t
}

// expire is the timer callback of an entrypoint that exits by itself at
// deadline. With a FakeClock it runs under the clock's lock, so it must not
// call the clock.
func (s *state) expire(c *containerRec, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.st.State != sandbox.ContainerStateRunning {
		return
	}
	c.timer = nil // it fired: nothing to stop
	code, reason := c.beh.selfExit()
	s.exitLocked(c, deadline, code, reason)
}

// doneLocked returns a channel closed when c exits.
func (c *containerRec) doneLocked() <-chan struct{} {
	if c.done == nil {
		c.done = make(chan struct{})
		if c.st.State == sandbox.ContainerStateExited {
			close(c.done)
		}
	}
	return c.done
}

// deleteContainerLocked forgets an exited container.
func (s *state) deleteContainerLocked(c *containerRec, at time.Time) {
	delete(c.sb.containers, c.st.ID)
	delete(c.sb.names, nameKey(c.st.Name, c.st.Attempt))
	delete(s.containers, c.st.ID)
	s.emitLocked(c, sandbox.ContainerDeleted, at)
}

// printLocked records what the entrypoint prints and appends it to its CRI
// log file when it has one. The write happens under the lock so a reader
// who sees the container exited finds its whole log.
func (s *state) printLocked(c *containerRec, at time.Time, stdout, stderr []string) {
	var lines []LogLine
	for _, st := range []struct {
		name string
		text []string
	}{{"stdout", stdout}, {"stderr", stderr}} {
		for _, t := range st.text {
			for l := range strings.SplitSeq(t, "\n") {
				lines = append(lines, LogLine{Time: at, Stream: st.name, Text: l})
			}
		}
	}
	c.out = append(c.out, lines...)
	if c.cfg.LogPath == "" || c.sb.cfg.LogDirectory == "" {
		return
	}
	if err := writeCRILog(c.st.LogPath, lines); err != nil {
		s.log.Warn("fake: writing container log", "container", c.st.ID, "path", c.st.LogPath, "err", err)
	}
}

// writeCRILog appends lines to path in the CRI log format, creating the
// file (empty when there are no lines) and its directory.
func writeCRILog(path string, lines []LogLine) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := regfile.Open(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s F %s\n", l.Time.Format(time.RFC3339Nano), l.Stream, l.Text)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func appendTimer(ts []clock.Timer, t clock.Timer) []clock.Timer {
	if t != nil {
		ts = append(ts, t)
	}
	return ts
}

func sortBySeq[T any](xs []T, seq func(T) uint64) {
	slices.SortFunc(xs, func(a, b T) int { return cmp.Compare(seq(a), seq(b)) })
}
