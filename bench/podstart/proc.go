package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// cpuTime is a process's user+system time so far (0 when it is gone).
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command may hold spaces and parentheses: fields start after
	// the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / clockTicks
}

// procMem is a process's resident memory from /proc/<pid>/smaps_rollup.
type procMem struct {
	RSS, PSS, Anon uint64 // bytes
	// Private is the process's own pages (private clean + dirty): for
	// the supervisor, what it adds to the node process, whose binary it
	// re-executes and whose code pages it shares.
	Private uint64
}

func readProcMem(pid int) procMem {
	var m procMem
	if pid <= 0 {
		return m
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m
	}
	defer f.Close()
	var clean, dirty uint64
	fields := map[string]*uint64{"Rss:": &m.RSS, "Pss:": &m.PSS, "Anonymous:": &m.Anon,
		"Private_Clean:": &clean, "Private_Dirty:": &dirty}
	s := bufio.NewScanner(f)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		if dst, ok := fields[f[0]]; ok {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			*dst = kb * 1024
		}
	}
	m.Private = clean + dirty
	return m
}

func (m procMem) String() string {
	return fmt.Sprintf("RSS %.1f MiB (PSS %.1f, anon %.1f, private %.1f)", mib(m.RSS), mib(m.PSS), mib(m.Anon), mib(m.Private))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// loadAvg is the 1-minute load average ("" when unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return f[0]
}

// pidFile reads a pid from a file (0 when missing).
func pidFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func numCPU() int { return runtime.NumCPU() }

// childrenCPU is the CPU time of ppid's live children so far: for the
// supervisor, its container inits (their setup before exec, and the
// containers' own time after).
func childrenCPU(ppid int) time.Duration {
	if ppid <= 0 {
		return 0
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, _ := strconv.Atoi(f[1]); pp == ppid {
			sum += cpuTime(pid)
		}
	}
	return sum
}
