// Package procstat reads what podkit's benchmarks and the sandbox runtime
// need to know about a process from /proc: its parent, state and CPU time
// (/proc/<pid>/stat), its memory (/proc/<pid>/smaps_rollup), its children,
// and the host's load average.
//
// It stands beside the pod's birth sequence rather than in it: the OCI
// runtime wrapper uses ReadStat to tell whether a pid it is about to
// signal is still the child it started, and the programs under bench/
// charge the CPU time and memory of the cluster's processes (API server,
// kubelet, runtime supervisor, container inits) to the pods they start.
//
// Design decisions:
//   - The command name in /proc/<pid>/stat may hold spaces and
//     parentheses, so the fields are read after its last ')'.
//   - CPU time is utime+stime in USER_HZ ticks, which is 100 on every
//     architecture Go supports on Linux; SelfCPU uses getrusage instead,
//     whose microsecond resolution suits short measured sections.
//   - Readers return errors wrapping the underlying one (a process that
//     is gone gives fs.ErrNotExist); CPU returns 0 for a gone process,
//     because a benchmark sampling processes that may exit wants a number,
//     not a branch.
package procstat
