package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
const clockTicks = 100

// Stat is the part of /proc/<pid>/stat podkit reads.
type Stat struct {
	// State is the process state letter: 'R', 'S', 'D', 'Z' (zombie), ...
	State byte
	// PPID is the parent's pid.
	PPID int
	// CPU is the user+system time the process (all its threads) has used.
	CPU time.Duration
}

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(statPath(pid))
	if err != nil {
		return Stat{}, fmt.Errorf("stat of process %d: %w", pid, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("stat of process %d: %w", pid, err)
	}
	return st, nil
}

func statPath(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/stat" }

// parseStat parses "pid (comm) state ppid ... utime stime ...".
func parseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("no command name in %q", b)
	}
	// f[0] is field 3 (state), f[1] field 4 (ppid); utime and stime are
	// fields 14 and 15.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("short stat line %q", b)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("ppid: %w", err)
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("stime: %w", err)
	}
	return Stat{State: f[0][0], PPID: ppid, CPU: time.Duration(utime+stime) * time.Second / clockTicks}, nil
}

// CPU is a process's user+system time so far: 0 when it is gone (or pid
// is not positive).
func CPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	st, err := ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.CPU
}

// SelfCPU is the calling process's user+system time so far, from
// getrusage(RUSAGE_SELF): finer grained than CPU(os.Getpid()).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Children lists the live processes whose parent is ppid; the error is
// only that /proc could not be listed.
func Children(ppid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("children of %d: %w", ppid, err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil && st.PPID == ppid {
			out = append(out, pid)
		}
	}
	return out, nil
}

// LoadAvg is the host's load average as /proc/loadavg writes it ("0.52").
type LoadAvg struct{ One, Five, Fifteen string }

// ReadLoadAvg reads /proc/loadavg.
func ReadLoadAvg() (LoadAvg, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return LoadAvg{}, fmt.Errorf("load average: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return LoadAvg{}, fmt.Errorf("load average: short line %q", b)
	}
	return LoadAvg{f[0], f[1], f[2]}, nil
}

// String is the three averages separated by spaces, as uptime(1) shows them.
func (l LoadAvg) String() string { return l.One + " " + l.Five + " " + l.Fifteen }
