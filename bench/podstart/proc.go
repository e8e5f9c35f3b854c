package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/podkit/podkit/internal/procstat"
)

// procMem is a process's resident memory, as the report prints it. Its
// private part is, for the supervisor, what it adds to the node process,
// whose binary it re-executes and whose code pages it shares.
type procMem struct{ procstat.Memory }

// readProcMem reads pid's memory (zero when pid is not positive or gone).
func readProcMem(pid int) procMem {
	if pid <= 0 {
		return procMem{}
	}
	m, _ := procstat.ReadMemory(pid)
	return procMem{m}
}

func (m procMem) String() string {
	return fmt.Sprintf("RSS %.1f MiB (PSS %.1f, anon %.1f, private %.1f)", mib(m.RSS), mib(m.PSS), mib(m.Anon), mib(m.Private()))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// loadAvg is the 1-minute load average ("?" when unknown).
func loadAvg() string {
	l, err := procstat.ReadLoadAvg()
	if err != nil {
		return "?"
	}
	return l.One
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
	kids, _ := procstat.Children(ppid)
	var sum time.Duration
	for _, pid := range kids {
		sum += procstat.CPU(pid)
	}
	return sum
}
