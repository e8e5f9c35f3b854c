package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The supervisor's part of a runtime root, for a runtime that removes the
// root once nothing lives in it (native.Runtime.RemoveRoot).

// RootEntries are the names the supervisor keeps in a runtime root: its
// task records directory and its socket, pid, lock and log files.
func RootEntries() []string { return []string{tasksDir, sockName, pidName, lockName, logName} }

// StartLockPath is the file whose flock serialises supervisor starts in
// root: whoever holds it, no supervisor is being started there.
func StartLockPath(root string) string { return filepath.Join(root, lockName) }

// Running reports whether a supervisor serves root: one holds the flock
// on root's pid file for its whole life and removes the file last.
func Running(root string) (bool, error) {
	f, err := os.Open(filepath.Join(root, pidName))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("supervisor pid file: %w", err)
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil, nil
}
