package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTime is a process's user+system time so far (utime and stime of
// /proc/<pid>/stat, in USER_HZ = 100 ticks per second; 0 when it is gone).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / 100
}

// procMem is resident memory from /proc/<pid>/smaps_rollup, in bytes.
type procMem struct{ RSS, PSS uint64 }

func (m procMem) add(o procMem) procMem { return procMem{m.RSS + o.RSS, m.PSS + o.PSS} }

func (m procMem) String() string {
	return fmt.Sprintf("RSS %.1f MiB (PSS %.1f MiB)", float64(m.RSS)/(1<<20), float64(m.PSS)/(1<<20))
}

func readProcMem(pid int) procMem {
	var m procMem
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(fs[1], 10, 64)
		switch fs[0] {
		case "Rss:":
			m.RSS = kb * 1024
		case "Pss:":
			m.PSS = kb * 1024
		}
	}
	return m
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
