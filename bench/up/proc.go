package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podkit/podkit/internal/procstat"
)

// procMem is resident memory, in bytes: all of it, its proportional share
// (pages shared with other processes divided among them) and the
// anonymous part (heap, stacks; the rest is the executable's pages).
type procMem struct{ procstat.Memory }

func (m procMem) String() string {
	return fmt.Sprintf("RSS %.1f MiB (PSS %.1f, anonymous %.1f MiB)", float64(m.RSS)/(1<<20), float64(m.PSS)/(1<<20), float64(m.Anon)/(1<<20))
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
	l, err := procstat.ReadLoadAvg()
	if err != nil {
		return "?"
	}
	return l.String()
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
