package fake

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/podkit/podkit/sandbox"
)

// ExecSync runs cmd in a running container, in memory: a command listed in
// the Behavior's ExecResults returns that result; the testbox commands that
// print and exit (`print`, `eprint`, `exit`, `hostname`, `env`, `pwd`, with
// or without a leading testbox) run as the entrypoint would; any other
// command exits 0 when the container is ready and 1 when it is not (see
// Behavior.Ready), which serves exec probes. Commands complete at once, so
// timeout never expires. It fails with sandbox.ErrNotReady when the
// container is not running.
func (r *Runner) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (_ *sandbox.ExecResult, err error) {
	s := r.s
	now := s.clock.Now()
	defer func() {
		s.mu.Lock()
		s.recordLocked("ExecSync", id, now, err)
		s.mu.Unlock()
	}()
	s.mu.Lock()
	if err := s.injectedLocked("ExecSync"); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	c, running, err := s.runningLocked(id, now)
	if err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("exec %q: %w", cmd, err)
	}
	if len(cmd) == 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("exec in container %s: empty command: %w", id, sandbox.ErrInvalid)
	}
	res, scripted := c.beh.ExecResults[strings.Join(cmd, " ")]
	var out output
	var known bool
	if !scripted {
		if words, _ := testboxWords(cmd); len(words) > 0 {
			out, known = oneShot(&c.sb.cfg, &c.cfg, words)
		}
	}
	ready := c.beh.Ready
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec %q in container %s: %w", cmd, id, err)
	}
	switch {
	case scripted:
		return &sandbox.ExecResult{Stdout: slices.Clone(res.Stdout), Stderr: slices.Clone(res.Stderr), ExitCode: res.ExitCode}, nil
	case known:
		return &sandbox.ExecResult{Stdout: joinLines(out.stdout), Stderr: joinLines(out.stderr), ExitCode: out.code}, nil
	case ready == nil || ready(running):
		return &sandbox.ExecResult{}, nil
	}
	return &sandbox.ExecResult{Stderr: []byte("not ready\n"), ExitCode: 1}, nil
}

// Ready reports the scripted readiness of a container (see
// Behavior.Ready): one that does not run is not ready. It serves simulated
// HTTP and TCP probes.
func (r *Runner) Ready(ctx context.Context, id string) (bool, error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	c, ok := s.containers[id]
	if !ok {
		s.mu.Unlock()
		return false, fmt.Errorf("container %s: %w", id, sandbox.ErrNotFound)
	}
	if c.st.State != sandbox.ContainerStateRunning {
		s.mu.Unlock()
		return false, nil
	}
	ready, running := c.beh.Ready, now.Sub(c.st.StartedAt)
	s.mu.Unlock()
	return ready == nil || ready(running), nil
}

// Output returns what a container printed so far.
func (r *Runner) Output(id string) ([]LogLine, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, sandbox.ErrNotFound)
	}
	return slices.Clone(c.out), nil
}

// runningLocked finds a running container and says for how long it has
// run at now.
func (s *state) runningLocked(id string, now time.Time) (*containerRec, time.Duration, error) {
	c, ok := s.containers[id]
	if !ok {
		return nil, 0, fmt.Errorf("container %s: %w", id, sandbox.ErrNotFound)
	}
	if c.st.State != sandbox.ContainerStateRunning {
		return nil, 0, fmt.Errorf("container %s is %s: %w", id, c.st.State, sandbox.ErrNotReady)
	}
	return c, now.Sub(c.st.StartedAt), nil
}

func joinLines(lines []string) []byte {
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}
