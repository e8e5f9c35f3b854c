package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procStat is what the supervisor needs from /proc/<pid>/stat.
type procStat struct {
	state byte
	ppid  int
	start uint64 // starttime, clock ticks after boot
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(data)
}

// parseProcStat parses "pid (comm) state ppid ...": comm may hold spaces
// and parentheses, so fields are counted after the last ')'.
func parseProcStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed /proc stat %q", data)
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed /proc stat %q", data)
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat ppid: %w", err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat starttime: %w", err)
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// readOOMKills reads the oom_kill counter of a memory cgroup: from
// memory.events on cgroup v2, memory.oom_control on v1.
func readOOMKills(dir string) (uint64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	}
	if err != nil {
		return 0, err
	}
	return kvValue(data, "oom_kill")
}

// kvValue finds "key value" in a flat-keyed cgroup file.
func kvValue(data []byte, key string) (uint64, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == key {
			return strconv.ParseUint(string(f[1]), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s counter: %w", key, os.ErrNotExist)
}

// oomGrew tells whether the task's memory cgroup recorded an OOM kill
// since the task was created. Without a counter (no cgroup, a kernel
// before 4.13 on v1, the cgroup removed already) it says false.
func oomGrew(rec *taskRecord) bool {
	if rec.OOMBase == nil || rec.MemoryCgroupDir == "" {
		return false
	}
	n, err := readOOMKills(rec.MemoryCgroupDir)
	return err == nil && n > *rec.OOMBase
}

// openPidFD opens a non-blocking pidfd, registered with the runtime's
// poller so waitPidFD parks no thread.
func openPidFD(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(pid)), nil
}

// waitPidFD returns once the process has exited (a pidfd polls readable
// then), or with an error wrapping os.ErrClosed when f is closed first.
func waitPidFD(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool {
		// A non-blocking poll each time the runtime's poller wakes us
		// (and once before the first wait): true once it has exited.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(pfd, 0)
			if !errors.Is(err, unix.EINTR) {
				return n > 0
			}
		}
	})
}

// signalPidFD sends sig to the process of a pidfd.
func signalPidFD(f *os.File, sig syscall.Signal) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), sig, nil, 0) }); err != nil {
		return err
	}
	return serr
}
