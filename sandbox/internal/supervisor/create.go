package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// createTask starts a task's process with its output piped into the log,
// adopts it (its exit will be reaped here) and records it on disk.
func (s *server) createTask(ctx context.Context, spec TaskSpec) (TaskState, error) {
	if err := spec.validate(); err != nil {
		return TaskState{}, err
	}
	t := newTask(taskRecord{ID: spec.ID, Kind: spec.Kind, CreatedAt: s.cfg.now(), LogPath: spec.LogPath,
		MemoryCgroupDir: spec.MemoryCgroupDir, Labels: spec.Labels})
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		return TaskState{}, fmt.Errorf("create task %q: supervisor is exiting: %w", spec.ID, ErrClosed)
	case s.tasks[spec.ID] != nil:
		s.mu.Unlock()
		return TaskState{}, fmt.Errorf("create task %q: %w", spec.ID, ErrAlreadyExists)
	}
	s.tasks[spec.ID] = t // reserves the id; hidden until ready
	s.updateIdleLocked()
	s.mu.Unlock()

	err := s.start(ctx, t, spec)
	var st TaskState
	s.mu.Lock()
	if err == nil {
		t.ready = true
		st = t.stateLocked()
	} else {
		delete(s.tasks, spec.ID)
		s.updateIdleLocked()
	}
	s.mu.Unlock()
	close(t.created)
	if err != nil {
		t.closeIO()
		s.log.Warn("create task failed", "id", spec.ID, "err", err)
		return TaskState{}, err
	}
	s.log.Info("task created", "id", spec.ID, "kind", spec.Kind, "pid", st.Pid)
	return st, nil
}

// start does the work of createTask; on error the caller forgets the
// task, and start has killed any process it adopted.
func (s *server) start(ctx context.Context, t *task, spec TaskSpec) error {
	dir := s.taskDir(spec.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create task %q: %w", spec.ID, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	sink, err := s.cfg.openSink(spec.LogPath)
	if err != nil {
		return fmt.Errorf("create task %q: log: %w", spec.ID, err)
	}
	tio, stdout, stderr, err := newTaskIO(sink, s.bufs, spec.Kind == KindExec)
	if err != nil {
		sink.Close()
		return fmt.Errorf("create task %q: %w", spec.ID, err)
	}
	t.io = tio
	if spec.MemoryCgroupDir != "" {
		if n, err := readOOMKills(spec.MemoryCgroupDir); err == nil {
			t.rec.OOMBase = &n
		} else {
			s.log.Warn("no oom_kill counter: OOMKilled will not be reported", "id", spec.ID, "err", err)
		}
	}
	var pid int
	switch spec.Kind {
	case KindNative:
		pid, err = s.launchNative(ctx, spec, stdout, stderr)
	case KindExec:
		pid, err = s.runExec(ctx, t, spec, stdout, stderr)
	}
	stdout.Close()
	stderr.Close()
	if err != nil {
		return err
	}
	if err := s.adopt(t, pid); err != nil {
		return fmt.Errorf("create task %q: %w", spec.ID, err)
	}
	if err := writeJSONAtomic(dir, taskFile, &t.rec); err != nil {
		s.mu.Lock()
		s.signalLocked(t, syscall.SIGKILL)
		s.mu.Unlock()
		return fmt.Errorf("create task %q: record: %w", spec.ID, err)
	}
	ok = true
	return nil
}

func (s *server) launchNative(ctx context.Context, spec TaskSpec, stdout, stderr *os.File) (int, error) {
	if s.native == nil {
		return 0, fmt.Errorf("create task %q: this binary registered no native launcher: %w", spec.ID, ErrInvalid)
	}
	place := func(pid int) error {
		for _, f := range spec.Native.CgroupProcs {
			if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0); err != nil {
				return fmt.Errorf("place pid %d in cgroup: %w", pid, err)
			}
		}
		return nil
	}
	pid, err := s.native(ctx, *spec.Native, stdout, stderr, place)
	if err != nil {
		return 0, fmt.Errorf("create task %q: %w", spec.ID, err)
	}
	return pid, nil
}

// runExec runs an exec task's command, waits for it (through the reaper)
// and returns the pid it wrote to its pid file.
func (s *server) runExec(ctx context.Context, t *task, spec TaskSpec, stdout, stderr *os.File) (int, error) {
	x := spec.Exec
	path := x.Argv[0]
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return 0, fmt.Errorf("create task %q: %w: %w", spec.ID, err, ErrInvalid)
		}
		path = p
	}
	if err := os.Remove(x.PidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("create task %q: stale pid file: %w", spec.ID, err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	env := x.Env
	if env == nil {
		env = os.Environ()
	}
	dir := x.Dir
	if dir == "" {
		dir = "/"
	}
	// Its own process group, so that giving up on it (ctx) also kills
	// what it started, e.g. a half-created container.
	proc, err := os.StartProcess(path, x.Argv, &os.ProcAttr{Dir: dir, Env: env, Files: []*os.File{devnull, stdout, stderr},
		Sys: &syscall.SysProcAttr{Setpgid: true}})
	// Our copies of the write ends must go now: the pipes reach EOF when
	// the command and its processes are done with them.
	stdout.Close()
	stderr.Close()
	if err != nil {
		return 0, fmt.Errorf("create task %q: %w", spec.ID, err)
	}
	pid := proc.Pid
	proc.Release() // the reaper waits for it, never os.Process
	exited := make(chan unix.WaitStatus, 1)
	s.mu.Lock()
	err = s.claimLocked(pid, func(ws unix.WaitStatus, _ time.Time) { exited <- ws })
	s.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("create task %q: %s: %w", spec.ID, path, err)
	}
	var ws unix.WaitStatus
	select {
	case ws = <-exited:
	case <-ctx.Done():
		s.killGroup(pid)
		ws = <-exited
		s.killAdoptable(x.PidFile)
		return 0, fmt.Errorf("create task %q: %s: %w", spec.ID, path, ctx.Err())
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.io.drain(s.cfg.drainGrace)
		out := strings.TrimSpace(t.io.captured())
		s.killAdoptable(x.PidFile)
		return 0, fmt.Errorf("create task %q: %s %s: %s", spec.ID, path, describeStatus(ws), out)
	}
	t.io.stopCapture()
	data, err := os.ReadFile(x.PidFile)
	if err != nil {
		return 0, fmt.Errorf("create task %q: %s exited 0 but: %w", spec.ID, path, err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("create task %q: pid file %s holds %q", spec.ID, x.PidFile, data)
	}
	return pid, nil
}

// killGroup kills the process group led by a child that has not been
// reaped yet (while it is not, its pid cannot name another group).
func (s *server) killGroup(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.waiters[pid]; ok {
		unix.Kill(-pid, unix.SIGKILL)
	}
}

// killAdoptable kills the process a failed exec task's command left
// behind (named in its pid file), when it is our child: nobody else would.
func (s *server) killAdoptable(pidFile string) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, err := readProcStat(pid); err == nil && st.ppid == os.Getpid() {
		unix.Kill(pid, unix.SIGKILL) // reaped into s.unclaimed
	}
}

// adopt makes pid the task's process: its exit, even one that already
// happened, is delivered to finish.
func (s *server) adopt(t *task, pid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, err := readProcStat(pid); err == nil {
		if st.ppid != os.Getpid() {
			return fmt.Errorf("process %d is not a child of the supervisor (its parent is %d); it cannot be supervised", pid, st.ppid)
		}
		t.rec.StartTime = st.start
	}
	t.rec.Pid = pid
	return s.claimLocked(pid, func(ws unix.WaitStatus, at time.Time) {
		t.reaped = true // called with s.mu held
		go s.finish(t, ws, at)
	})
}

// describeStatus says how a process ended.
func describeStatus(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exited with status " + strconv.Itoa(ws.ExitStatus())
}
