package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// task is one supervised process. Fields other than rec's immutable parts
// are guarded by server.mu.
type task struct {
	rec taskRecord
	io  *taskIO // nil for tasks reloaded from disk
	// created is closed when CreateTask has finished with the task
	// (successfully or not); an exit is recorded only after that.
	created chan struct{}
	ready   bool // CreateTask succeeded (or the task was reloaded)
	// reaped: wait4 returned the process's status; its pid may be reused
	// and must not be signalled any more.
	reaped bool
	// pidfd refers to an orphaned task's process (not our child).
	pidfd *os.File
	exit  *exitRecord
	done  chan struct{} // closed once exit is set
}

func newTask(rec taskRecord) *task {
	return &task{rec: rec, created: make(chan struct{}), done: make(chan struct{})}
}

// stateLocked reports the task.
func (t *task) stateLocked() TaskState {
	st := TaskState{ID: t.rec.ID, Pid: t.rec.Pid, CreatedAt: t.rec.CreatedAt,
		Orphaned: t.pidfd != nil, Labels: maps.Clone(t.rec.Labels)}
	if e := t.exit; e != nil {
		st.Exited, st.ExitCode, st.Signal, st.FinishedAt = true, e.ExitCode, e.Signal, e.FinishedAt
		st.OOMKilled, st.Message, st.Orphaned = e.OOMKilled, e.Message, e.Orphaned
	}
	return st
}

// getLocked finds a task that CreateTask has returned.
func (s *server) getLocked(id string) (*task, error) {
	t := s.tasks[id]
	if t == nil || !t.ready {
		return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	return t, nil
}

func (s *server) state(id string) (TaskState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.getLocked(id)
	if err != nil {
		return TaskState{}, err
	}
	return t.stateLocked(), nil
}

func (s *server) list() []TaskState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskState, 0, len(s.tasks))
	for _, t := range s.tasks {
		if t.ready {
			out = append(out, t.stateLocked())
		}
	}
	slices.SortFunc(out, func(a, b TaskState) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// signal sends sig to a running task. A task that is unknown or has
// exited is not an error for SIGKILL (killing is idempotent).
func (s *server) signal(id string, sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.getLocked(id)
	if err != nil {
		if sig == syscall.SIGKILL {
			return nil
		}
		return err
	}
	err = s.signalLocked(t, sig)
	if errors.Is(err, ErrExited) && sig == syscall.SIGKILL {
		return nil
	}
	return err
}

// signalLocked signals a task's process. Our children are signalled by pid
// while s.mu is held and they are not reaped: the reaper needs s.mu to
// reap, so the pid cannot have been reused. Orphans go through a pidfd.
func (s *server) signalLocked(t *task, sig syscall.Signal) error {
	if t.exit != nil || t.reaped {
		return fmt.Errorf("signal %d to task %q: %w", sig, t.rec.ID, ErrExited)
	}
	var err error
	if t.pidfd != nil {
		err = signalPidFD(t.pidfd, sig)
	} else {
		err = unix.Kill(t.rec.Pid, sig)
	}
	switch {
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("signal %d to task %q: %w", sig, t.rec.ID, ErrExited)
	case err != nil:
		return fmt.Errorf("signal %d to task %q (pid %d): %w", sig, t.rec.ID, t.rec.Pid, err)
	}
	return nil
}

// wait blocks until the task has exited.
func (s *server) wait(ctx context.Context, id string) (TaskState, error) {
	s.mu.Lock()
	t, err := s.getLocked(id)
	s.mu.Unlock()
	if err != nil {
		return TaskState{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return TaskState{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.stateLocked(), nil
}

// delete removes an exited task: its output pipes and log, its records.
// With force a running task is killed first and its exit awaited.
func (s *server) delete(ctx context.Context, id string, force bool) error {
	s.mu.Lock()
	t, err := s.getLocked(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if t.exit == nil {
		if !force {
			s.mu.Unlock()
			return fmt.Errorf("delete task %q (pid %d): %w", id, t.rec.Pid, ErrRunning)
		}
		if err := s.signalLocked(t, syscall.SIGKILL); err != nil && !errors.Is(err, ErrExited) {
			s.mu.Unlock()
			return fmt.Errorf("delete: %w", err)
		}
	}
	s.mu.Unlock()
	select {
	case <-t.done:
	case <-ctx.Done():
		return fmt.Errorf("delete task %q: waiting for its exit: %w", id, ctx.Err())
	}
	t.closeIO()
	// The directory goes before the map entry: while the entry exists no
	// CreateTask can reuse the id and its directory.
	if err := os.RemoveAll(s.taskDir(id)); err != nil {
		return fmt.Errorf("delete task %q: %w", id, err)
	}
	s.mu.Lock()
	if s.tasks[id] == t {
		delete(s.tasks, id)
	}
	s.updateIdleLocked()
	s.mu.Unlock()
	return nil
}

// closeIO ends the task's output copying and closes its pidfd.
func (t *task) closeIO() {
	if t.io != nil {
		t.io.close()
	}
	if t.pidfd != nil {
		t.pidfd.Close()
	}
}
