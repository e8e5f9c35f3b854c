package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// taskRecord is <root>/tasks/<id>/task.json, written once the process is
// adopted.
type taskRecord struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	Pid  int    `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat (clock ticks after boot):
	// with the pid it identifies the process across pid reuse.
	StartTime       uint64            `json:"startTime"`
	CreatedAt       time.Time         `json:"createdAt"`
	LogPath         string            `json:"logPath,omitempty"`
	MemoryCgroupDir string            `json:"memoryCgroupDir,omitempty"`
	OOMBase         *uint64           `json:"oomBase,omitempty"` // oom_kill counter at creation
	Labels          map[string]string `json:"labels,omitempty"`
}

// exitRecord is <root>/tasks/<id>/exit.json.
type exitRecord struct {
	ExitCode   int32     `json:"exitCode"`
	Signal     int       `json:"signal,omitempty"`
	FinishedAt time.Time `json:"finishedAt"`
	OOMKilled  bool      `json:"oomKilled,omitempty"`
	Message    string    `json:"message,omitempty"`
	Orphaned   bool      `json:"orphaned,omitempty"`
}

// writeJSONAtomic replaces dir/name with v atomically: a temporary file
// renamed over it, so a crash of the supervisor leaves the old file or the
// new one, never a torn one. There is no fsync: the records describe
// processes, which a power loss or reboot ends anyway (the root is under
// /run, tmpfs on most hosts), and a flush per task cost several
// milliseconds of every container start on a disk-backed /run.
func writeJSONAtomic(dir, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// reload restores the tasks an earlier supervisor process left in
// <root>/tasks (it died: killed, or crashed). Tasks with an exit record
// stay exited. A task whose process still runs (same pid and start time,
// not a zombie) is an orphan: reported running, signalled and watched
// through a pidfd; its exit code is lost. A task whose process is gone
// exited unseen: exit code 255 with msgUnknownExit, recorded so the
// answer stays the same after further restarts.
func (s *server) reload() error {
	dir := filepath.Join(s.cfg.root, tasksDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tasks directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("tasks directory: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if t := s.loadTask(e.Name()); t != nil {
			s.tasks[t.rec.ID] = t
		}
	}
	return nil
}

func (s *server) loadTask(id string) *task {
	dir := s.taskDir(id)
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(tmps) > 0 {
		for _, p := range tmps {
			os.Remove(p)
		}
	}
	var rec taskRecord
	err := readJSON(filepath.Join(dir, taskFile), &rec)
	if errors.Is(err, os.ErrNotExist) {
		// Died inside CreateTask, before the record: nothing to report.
		s.log.Warn("task directory without a record removed", "id", id)
		os.RemoveAll(dir)
		return nil
	}
	t := newTask(rec)
	t.ready = true
	close(t.created)
	if err != nil || rec.ID != id {
		t.rec = taskRecord{ID: id}
		s.loadedExit(t, exitRecord{ExitCode: 255, FinishedAt: s.cfg.now(),
			Message: fmt.Sprintf("task record unreadable: %v", err)}, false)
		return t
	}
	var ex exitRecord
	if err := readJSON(filepath.Join(dir, exitFile), &ex); err == nil {
		s.loadedExit(t, ex, false)
		return t
	}
	if fd := openAlive(rec.Pid, rec.StartTime); fd != nil {
		t.pidfd = fd
		s.log.Warn("orphaned task: still running, exit code will be unknown", "id", id, "pid", rec.Pid)
		go s.watchOrphan(t)
		return t
	}
	s.loadedExit(t, exitRecord{ExitCode: 255, FinishedAt: s.cfg.now(), OOMKilled: oomGrew(&rec),
		Message: msgUnknownExit, Orphaned: true}, true)
	return t
}

func (s *server) loadedExit(t *task, ex exitRecord, persist bool) {
	if persist {
		if err := writeJSONAtomic(s.taskDir(t.rec.ID), exitFile, &ex); err != nil {
			s.log.Error("recording unseen exit", "id", t.rec.ID, "err", err)
		}
	}
	t.exit = &ex
	close(t.done)
}

// openAlive returns a pidfd for pid when it is the process that started
// at startTime and has not exited.
func openAlive(pid int, startTime uint64) *os.File {
	if pid <= 0 {
		return nil
	}
	f, err := openPidFD(pid)
	if err != nil {
		return nil
	}
	// The pidfd pins the process: checking after opening it means the
	// check is about the process the pidfd refers to.
	st, err := readProcStat(pid)
	if err != nil || st.start != startTime || st.state == 'Z' || st.state == 'X' {
		f.Close()
		return nil
	}
	return f
}
