package fake

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/sandbox"
)

// StopContainer delivers the stop signal: an entrypoint that handles it
// exits with its own code, one that ignores it is killed (137) after grace,
// any other dies of it (128+signal). A grace of zero or less kills at once,
// as containerd does. A Created container has no entrypoint to handle the
// signal and is killed (137). Stopping an exited container does nothing.
// StopContainer returns once the container has exited, or when ctx ends.
func (r *Runner) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	s := r.s
	now := s.clock.Now()
	wait, err := s.signal(id, now, grace)
	if wait != nil {
		err = s.awaitStop(ctx, id, wait, grace)
	}
	s.mu.Lock()
	s.recordLocked("StopContainer", id, now, err)
	s.mu.Unlock()
	return err
}

// signal delivers the stop signal. It returns a channel to wait on when
// the entrypoint ignores the signal.
func (s *state) signal(id string, now time.Time, grace time.Duration) (wait <-chan struct{}, err error) {
	s.mu.Lock()
	var timer clock.Timer
	defer func() {
		s.mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
	}()
	if err := s.injectedLocked("StopContainer"); err != nil {
		return nil, err
	}
	c, ok := s.containers[id]
	if !ok {
		return nil, fmt.Errorf("stop container %s: %w", id, sandbox.ErrNotFound)
	}
	b := &c.beh
	switch {
	case c.st.State == sandbox.ContainerStateCreated, c.st.State == sandbox.ContainerStateRunning && grace <= 0:
		timer = s.exitLocked(c, now, exitKilled, sandbox.ReasonError)
	case c.st.State != sandbox.ContainerStateRunning:
		// Exited already: nothing to do.
	case b.IgnoreTerm:
		return c.doneLocked(), nil
	case b.ExitOnTerm:
		timer = s.exitLocked(c, now, b.TermExitCode, reasonFor(b.TermExitCode))
	default:
		timer = s.exitLocked(c, now, int32(128+stopSignal(&c.cfg)), sandbox.ReasonError)
	}
	return nil, nil
}

// awaitStop waits for a container ignoring its stop signal to exit, and
// kills it when grace is over.
func (s *state) awaitStop(ctx context.Context, id string, done <-chan struct{}, grace time.Duration) error {
	t := s.clock.NewTimer(grace)
	select {
	case <-done:
		t.Stop()
		return nil
	case <-ctx.Done():
		t.Stop()
		return fmt.Errorf("stop container %s: %w", id, ctx.Err())
	case at := <-t.C():
		s.mu.Lock()
		var timer clock.Timer
		if c, ok := s.containers[id]; ok && c.st.State == sandbox.ContainerStateRunning {
			timer = s.exitLocked(c, at, exitKilled, sandbox.ReasonError)
		}
		s.mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		return nil
	}
}

// RemoveContainer kills the container if it still runs (137) and forgets
// it. Removing an unknown container succeeds.
func (r *Runner) RemoveContainer(ctx context.Context, id string) (err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	var timers []clock.Timer
	defer func() {
		s.recordLocked("RemoveContainer", id, now, err)
		s.mu.Unlock()
		stopTimers(timers)
	}()
	if err := s.injectedLocked("RemoveContainer"); err != nil {
		return err
	}
	c, ok := s.containers[id]
	if !ok {
		return nil
	}
	if c.st.State == sandbox.ContainerStateCreated || c.st.State == sandbox.ContainerStateRunning {
		timers = appendTimer(timers, s.exitLocked(c, now, exitKilled, sandbox.ReasonError))
	}
	s.deleteContainerLocked(c, now)
	return nil
}

// Exit makes a running container exit now with code, as if its entrypoint
// crashed or finished (reason Completed for 0, Error otherwise). It fails
// with sandbox.ErrNotReady when the container is not running.
func (r *Runner) Exit(ctx context.Context, id string, code int32) error {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	c, ok := s.containers[id]
	var timer clock.Timer
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("exit container %s: %w", id, sandbox.ErrNotFound)
	case c.st.State != sandbox.ContainerStateRunning:
		err = fmt.Errorf("exit container %s: container is %s: %w", id, c.st.State, sandbox.ErrNotReady)
	default:
		timer = s.exitLocked(c, now, code, reasonFor(code))
	}
	s.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	return err
}
