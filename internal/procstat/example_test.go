package procstat_test

import (
	"fmt"
	"os"

	"github.com/podkit/podkit/internal/procstat"
)

// A benchmark charges the CPU time and memory of a process to what it
// measures.
func Example() {
	pid := os.Getpid()
	before := procstat.CPU(pid)
	// ... the measured work ...
	used := procstat.CPU(pid) - before

	st, err := procstat.ReadStat(pid)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := procstat.ReadMemory(pid)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(used >= 0, st.PPID == os.Getppid(), m.RSS > 0, m.Private() <= m.RSS)
	// Output: true true true true
}
