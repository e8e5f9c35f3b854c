package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// supervisorMemory reads a process's resident set (VmRSS) and
// proportional set (Pss, which splits shared pages among their users) in
// KiB.
func supervisorMemory(tb testing.TB, pid int) (rss, pss float64) {
	tb.Helper()
	rss = procKiB(tb, fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
	pss = procKiB(tb, fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
	return rss, pss
}

func procKiB(tb testing.TB, path, key string) float64 {
	tb.Helper()
	data, err := os.ReadFile(path)
	require.NoError(tb, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == key {
			v, err := strconv.ParseFloat(string(f[1]), 64)
			require.NoError(tb, err)
			return v
		}
	}
	tb.Fatalf("%s has no %s", path, key)
	return 0
}

// BenchmarkSupervisorMemory measures the supervisor's memory with no task
// and with 100 running tasks (sleep processes, each with its two output
// pipes copied into a log), and reports the difference per task. The
// timed loop is a State call (the RPC round trip).
func BenchmarkSupervisorMemory(b *testing.B) {
	root := newRoot(b)
	c := connect(b, root)
	ctx := testCtx(b)
	const n = 100
	rss0, pss0 := supervisorMemory(b, c.Pid())
	for i := range n {
		_, err := c.CreateTask(ctx, shTask(b, root, fmt.Sprintf("t%03d", i), "echo started; exec sleep 1000"))
		require.NoError(b, err)
	}
	rss1, pss1 := supervisorMemory(b, c.Pid())
	for b.Loop() {
		if _, err := c.State(ctx, "t000"); err != nil {
			b.Fatal(err)
		}
	}
	// After the loop: b.Loop clears metrics reported before it.
	b.ReportMetric(rss0, "base-RSS-KiB")
	b.ReportMetric(pss0, "base-PSS-KiB")
	b.ReportMetric((rss1-rss0)/n, "KiB/task")
	b.ReportMetric((pss1-pss0)/n, "PSS-KiB/task")
}

// BenchmarkCreateTask measures a task's whole life under the supervisor:
// create (pipes, log, launch through testLauncher, which starts the test
// binary as a gate that execs /bin/true), wait for its exit (recorded
// with fsync) and delete.
func BenchmarkCreateTask(b *testing.B) {
	root := newRoot(b)
	c := connect(b, root)
	ctx := testCtx(b)
	spec := shTask(b, root, "task", "")
	writeProcessSpec(b, spec.Native.SpecPath, []string{"/bin/true"}, nil)
	for b.Loop() {
		if _, err := c.CreateTask(ctx, spec); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Wait(ctx, spec.ID); err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(ctx, spec.ID); err != nil {
			b.Fatal(err)
		}
	}
}
