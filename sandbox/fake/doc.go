// Package fake is an in-memory sandbox.SandboxRunner (also a sandbox.Execer
// and a sandbox.EventSource) for unprivileged tests of the kubelet and for
// simulations of thousands of nodes in one process. It stands in for steps
// 12 and 14 of the birth sequence (sandbox, then container launch) without
// touching the kernel: no namespaces, mounts, cgroups or processes.
//
// # Behaviour
//
// A container's entrypoint is its merged command, built as Kubernetes does:
// Command+Args when the pod gives a command, else the image's Entrypoint
// followed by Args when the pod gives args, else Entrypoint+Cmd. Interpret
// reads that command as the vocabulary of podkit's test program
// (internal/testbox: `sleep N|inf`, `exit CODE`, `print TEXT`, `eprint
// TEXT`, `term-exit CODE`, `ignore-term`, `alloc MIB`, `hostname`, `env`,
// `pwd`) and turns it into a Behavior: what the entrypoint prints, how long
// it runs, how it exits and how it answers the stop signal. Commands the
// fake cannot imitate in memory run until stopped. WithBehavior replaces
// the interpretation with a Script of the caller's, which may fall back to
// Interpret.
//
// Nothing of the kernel is imitated: Sandbox.NetNS is empty (no namespace
// is pinned), PIDs are synthetic, rootfs mounts, volumes, cgroups and
// security settings are recorded but have no effect.
//
// States, timestamps, exit codes and reasons follow the contract in
// package sandbox: a container is Created (CreatedAt) then Running
// (StartedAt, a synthetic PID) then Exited (FinishedAt, ExitCode, Reason
// Completed, Error or OOMKilled). StopContainer delivers the image's stop
// signal (SIGTERM by default): an entrypoint that ignores it is killed after
// the grace period (137), one that handles it exits with its own code, any
// other dies of it (128+signal). Stop and Remove are idempotent and errors
// wrap the sandbox sentinels.
//
// # Cost and time
//
// A simulation runs hundreds of thousands of containers, so the fake keeps
// one mutex per runner and no goroutine per container: a container that
// exits by itself holds one timer from the injected Clock (AfterFunc), and
// only a caller waiting in StopContainer blocks, in its own goroutine. Each
// Events subscriber costs one goroutine. With the FakeClock of
// k8s.io/utils/clock/testing a simulation runs in virtual time: timers fire
// when the test steps the clock, and a container's FinishedAt is exactly
// StartedAt+RunFor. The fake never calls the clock while holding its lock,
// and its timer callbacks never call the clock, because FakeClock runs
// callbacks while holding its own lock.
//
// # Testing hooks
//
// FailNext makes the next call of an operation fail with a given error,
// Calls lists the calls made, Output returns what a container printed, Exit
// makes a running container exit (a crash), Ready reports scripted
// readiness, and Reopen returns a second runner over the same state, as a
// restarted kubelet finds its containers still running. Sandboxes get
// addresses from a configurable prefix (WithPodCIDR). When a container has
// a LogPath and its sandbox a writable LogDirectory, what it prints is also
// written there in the CRI log format.
package fake
