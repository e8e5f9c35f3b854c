package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// procMem is resident memory from /proc/<pid>/smaps_rollup, in bytes:
// all of it, its proportional share (pages shared with other processes
// divided among them) and the anonymous part (heap, stacks; the rest is
// the executable's pages).
type procMem struct{ RSS, PSS, Anon uint64 }

func (m procMem) add(o procMem) procMem {
	return procMem{m.RSS + o.RSS, m.PSS + o.PSS, m.Anon + o.Anon}
}

func (m procMem) String() string {
	return fmt.Sprintf("RSS %.1f MiB (PSS %.1f, anonymous %.1f MiB)", float64(m.RSS)/(1<<20), float64(m.PSS)/(1<<20), float64(m.Anon)/(1<<20))
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
		case "Anonymous:":
			m.Anon = kb * 1024
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

// proc is one process of the measured cluster.
type proc struct {
	pid  int
	what string
}

// clusterProcesses are the processes of the cluster started as upPid with
// node names prefix-N: podkit up itself (unless upPid is 0) and the
// runtime supervisors of its nodes (titled "podkit-supervisor
// /run/podkit/<node>"), whichever binary they run.
func clusterProcesses(upPid int, prefix string) []proc {
	var out []proc
	if upPid != 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", upPid)); err == nil {
			out = append(out, proc{upPid, "podkit up"})
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || args[0] != "podkit-supervisor" || !strings.HasPrefix(filepath.Base(args[1]), prefix+"-") {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		out = append(out, proc{pid, "supervisor (" + filepath.Base(strings.TrimSuffix(exe, " (deleted)")) + ")"})
	}
	return out
}

func numCPU() int { return runtime.NumCPU() }
