package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"
)

// reap is the supervisor's only waiter: on every SIGCHLD it collects the
// status of every exited child with wait4(-1, WNOHANG) until none is left
// (signals coalesce, so one notification may stand for many exits). Each
// wait4 runs under s.mu: a pid is either unreaped (visible in /proc) or
// reaped and handed to its waiter or s.unclaimed, never in between; that
// is what makes claimLocked race-free. Nothing else in the supervisor may
// wait for a process (no os/exec Wait, no os.Process.Wait).
func (s *server) reap(ctx context.Context) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		s.reapAll()
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		}
	}
}

func (s *server) reapAll() {
	for {
		var ws unix.WaitStatus
		s.mu.Lock()
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid > 0 {
			s.reapedLocked(pid, ws, s.cfg.now())
		}
		s.mu.Unlock()
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil || pid <= 0: // ECHILD: no children; 0: none exited
			return
		}
	}
}

// reapedLocked hands a status to the pid's waiter, or keeps it for a
// while: a task's process can exit before CreateTask has adopted it (an
// exec task's command exits first, then the adopted process may die
// before the supervisor has read the pid file).
func (s *server) reapedLocked(pid int, ws unix.WaitStatus, at time.Time) {
	if h := s.waiters[pid]; h != nil {
		delete(s.waiters, pid)
		h(ws, at)
		return
	}
	for p, r := range s.unclaimed {
		if at.Sub(r.at) > s.cfg.unclaimedTTL || len(s.unclaimed) >= s.cfg.unclaimedMax {
			delete(s.unclaimed, p)
		}
	}
	s.unclaimed[pid] = reaped{ws: ws, at: at}
}

// claimLocked registers h for pid's exit, or calls it at once when the
// pid was reaped already. A pid visible in /proc is not reaped: an
// unclaimed status under the same number belongs to an earlier process
// and is dropped.
func (s *server) claimLocked(pid int, h func(unix.WaitStatus, time.Time)) error {
	if s.waiters[pid] != nil {
		return fmt.Errorf("process %d is already supervised", pid)
	}
	if _, err := readProcStat(pid); err == nil {
		delete(s.unclaimed, pid)
		s.waiters[pid] = h
		return nil
	}
	if r, ok := s.unclaimed[pid]; ok {
		delete(s.unclaimed, pid)
		s.log.Info("process had exited before it was claimed", "pid", pid, "status", describeStatus(r.ws))
		h(r.ws, r.at)
		return nil
	}
	return fmt.Errorf("process %d does not exist and is not a reaped child of the supervisor", pid)
}

// exitStatus turns a wait status into the exit code Kubernetes reports
// (128+signal for a signal) and the signal.
func exitStatus(ws unix.WaitStatus) (code int32, sig int) {
	if ws.Signaled() {
		return 128 + int32(ws.Signal()), int(ws.Signal())
	}
	return int32(ws.ExitStatus()), 0
}

// finish records a task's exit: the status, OOMKilled from the memory
// cgroup's counter, atomically to exit.json, and only then publishes it.
func (s *server) finish(t *task, ws unix.WaitStatus, at time.Time) {
	<-t.created
	code, sig := exitStatus(ws)
	ex := exitRecord{ExitCode: code, Signal: sig, FinishedAt: at, OOMKilled: oomGrew(&t.rec)}
	if t.io != nil {
		t.io.drain(s.cfg.drainGrace)
	}
	s.record(t, ex)
}

// record persists and publishes an exit, unless the task was forgotten
// (CreateTask failed after adopting it).
func (s *server) record(t *task, ex exitRecord) {
	s.mu.Lock()
	gone := s.tasks[t.rec.ID] != t
	s.mu.Unlock()
	if gone {
		t.closeIO()
		return
	}
	if err := writeJSONAtomic(s.taskDir(t.rec.ID), exitFile, &ex); err != nil {
		s.log.Error("exit not recorded on disk; a restarted supervisor will report exit code 255", "id", t.rec.ID, "err", err)
	}
	s.mu.Lock()
	t.exit = &ex
	close(t.done)
	st := t.stateLocked()
	s.publishLocked(st)
	s.updateIdleLocked()
	s.mu.Unlock()
	s.log.Info("task exited", "id", st.ID, "pid", st.Pid, "code", st.ExitCode, "signal", st.Signal,
		"oomKilled", st.OOMKilled, "orphaned", st.Orphaned)
}

// watchOrphan waits for an orphaned task (created by a supervisor that
// died) to exit; its status is lost, only that it exited is known.
func (s *server) watchOrphan(t *task) {
	if err := waitPidFD(t.pidfd); err != nil {
		if !errors.Is(err, os.ErrClosed) {
			s.log.Error("watching orphaned task", "id", t.rec.ID, "pid", t.rec.Pid, "err", err)
		}
		return
	}
	s.record(t, exitRecord{ExitCode: 255, FinishedAt: s.cfg.now(), OOMKilled: oomGrew(&t.rec),
		Message: msgUnknownExit, Orphaned: true})
}

// msgUnknownExit is the Message of an exit the supervisor did not see.
const msgUnknownExit = "supervisor restarted; exit code unknown"
