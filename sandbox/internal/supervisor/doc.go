// Package supervisor is the node-level parent of every container process
// of podkit's native runtime: steps 14 and 17 of the pod birth sequence
// (container launch; exit and teardown) happen under it.
//
// # Why one supervisor per node
//
// A container's process needs a parent that outlives the kubelet: one that
// holds its stdout and stderr pipes and copies them into the CRI log, and
// that reaps it to learn its exit status. containerd gives every pod a shim
// process; a Go shim costs ~2 MiB of RSS (20 MiB for a binary that links
// client-go), over the runtime's per-pod budget. So podkit runs one
// supervisor per runtime root instead: a re-exec of the current binary
// (PODKIT_SANDBOX_MODE=supervisor, the binary's main dispatches to Main),
// started by Connect in its own session with stdio to <root>/supervisor.log,
// marked PR_SET_CHILD_SUBREAPER. Every container process is its child:
// those it starts itself (KindNative, through the NativeLauncher the
// binary passes to Main) and those an OCI runtime leaves behind (KindExec:
// `runc create` exits, and the container's init is reparented to the
// nearest subreaper, the supervisor). A task costs the supervisor two
// goroutines parked in the poller, a few hundred bytes of bookkeeping and
// no read buffer while its container is silent: about 30 KiB of RSS per
// task on top of the process's own ~8 MiB (for the test binary;
// BenchmarkSupervisorMemory).
//
// The supervisor starts in the caller's cgroup; WithCgroupProcs moves it
// into its own, so that a service manager stopping the kubelet (which
// kills the kubelet's whole cgroup) does not take it along.
//
// The kubelet (the Client) may exit or crash at any time: the supervisor
// keeps the processes, their logs and their exits, and a new client
// Connects and finds them with List. A Client whose connection is lost
// connects again on its next call, starting a new supervisor if the old
// one died. When it has neither running tasks nor
// clients for its idle time (WithIdleExit, default 30 s) it removes its
// socket and pid file and exits; exited tasks need no process, their exits
// are on disk. There is no Shutdown call: a supervisor that exits while
// containers run would orphan them (see below), so only idleness ends it,
// which also lets tests finish cleanly with a short idle time.
//
// # Starting and connecting
//
// Connect dials <root>/supervisor.sock; when nothing answers it takes
// <root>/supervisor.lock (flock), dials again, and otherwise starts the
// supervisor and waits for it to report "ready" on a pipe. The supervisor
// holds an flock on <root>/supervisor.pid for its whole life, so even a
// start that races an exiting supervisor ends with exactly one serving.
//
// # Protocol
//
// JSON frames over the unix socket (see wire.go for why not net/rpc):
// requests run concurrently, a cancelled context cancels the request in
// the supervisor, errors keep their sentinel (errors.Is works across the
// socket), and Events is a stream on the same connection.
//
// # Reaping and exits
//
// One goroutine reaps: on SIGCHLD it calls wait4(-1, WNOHANG) until no
// exited child is left, under the supervisor's mutex; nothing else waits
// for processes (os/exec's Wait would race it), and that includes the
// NativeLauncher: whatever it starts, the reaper reaps. A status for a pid that no
// task has claimed yet is kept for a minute: a process may exit before
// CreateTask adopts it (runc create exits, then the container dies before
// the pid file is read). An exit is 128+signal for a signal, as Kubernetes
// reports it. OOMKilled says whether the oom_kill counter of the task's
// memory cgroup (memory.events on v2, memory.oom_control on v1) grew
// during the task's life: it is read from the counter only, never guessed
// from SIGKILL, so a task without a MemoryCgroupDir, or on a kernel without
// the counter, never reports it; and any OOM kill in the cgroup counts, also
// of another process of the container. Before the exit is published the
// supervisor waits (at most 2 s) for the task's pipes to drain, so the log
// is complete when Wait returns; then it writes <root>/tasks/<id>/exit.json
// (a temporary file renamed over it: atomic, not flushed, since a power
// loss ends every task anyway). Then Wait
// returns and Events delivers it.
//
// # When the supervisor itself dies
//
// It should not, but a SIGKILL (or a crash) must not corrupt its state:
// task.json and exit.json are replaced atomically, and a new supervisor
// reloads them. A task with an exit record stays exited with its real
// status. A task whose process is still alive (same pid and the same
// start time in /proc/<pid>/stat, so a reused pid is not mistaken for it,
// and not a zombie) was reparented to init, or to a subreaper above: this
// supervisor cannot wait for it and will never learn its exit code. It is
// reported running with Orphaned set; it can still be signalled and is
// watched through a pidfd, and when it exits it is reported with exit code
// 255, Orphaned and Message "supervisor restarted; exit code unknown"
// (OOMKilled still comes from the counter). Its output pipes died with the
// old supervisor: its output is lost and a write to them fails with EPIPE
// (or kills it with SIGPIPE). A task whose process is gone is reported
// exited the same way. The runtime should treat Orphaned tasks as
// degraded and restart them when convenient.
//
// # Files
//
//	<root>/supervisor.sock, supervisor.pid, supervisor.lock, supervisor.log
//	<root>/tasks/<id>/task.json   written when the process is adopted
//	<root>/tasks/<id>/exit.json   written when it exits
package supervisor
