// Package nsinit is podkit's native container init, the part of the
// runtime that libcontainer (runc) or crun play elsewhere, in pure Go: it
// turns a runtime-spec (specs.Spec) into a process running in its
// namespaces, on its root filesystem, with its identity. It covers steps
// 12 and 14 of the birth sequence at the kernel level; sandbox/native
// composes it with the supervisor, cgroups, overlay and network.
//
// # Lifecycle
//
// Create (called by the supervisor, which reaps every child with wait4(-1)
// and therefore never lets Create wait) forks a re-execution of the
// program (CreateConfig.Binary, default /proc/self/exe) in ModeInit.
// Namespaces with a path are joined by a goroutine locked to a fresh OS
// thread that setns'es into them and forks from there (network, IPC, UTS
// and cgroup namespaces are inherited; a joined PID namespace becomes the
// child's); new ones are clone flags, the mount namespace always new. The
// thread is never unlocked, so the runtime discards it. The child blocks
// until Create has called Place (to put it in its cgroup) and sent its
// config over a socket pair, then:
//
//  1. unshares a new cgroup namespace if asked (after placement, so the
//     namespace is rooted at the container's cgroup), sets hostname and
//     domain name in a new UTS namespace, namespaced sysctls and the OOM
//     score; opens the exec FIFO and the exec-error file of the state dir;
//  2. makes / rslave (or spec.Linux.RootfsPropagation), binds the rootfs
//     onto itself and performs the spec's mounts in order: proc, sysfs,
//     tmpfs, devpts, mqueue, bind mounts (read-only and other flags by a
//     bind remount, "rro" by mount_setattr(AT_RECURSIVE), then
//     propagation) and cgroup (below); destinations
//     are resolved inside the rootfs with openat2(RESOLVE_IN_ROOT) and
//     mounted through /proc/self/fd, so neither ".." nor symlinks in the
//     image can redirect a mount onto the host; missing mount points are
//     created (a file for a file source, dangling symlinks followed inside
//     the rootfs);
//  3. unless /dev is a bind mount, creates the default devices (null,
//     zero, full, random, urandom, tty) and spec.Linux.Devices with mknod,
//     or by binding the host's node when mknod is refused, plus /dev/fd,
//     /dev/std{in,out,err} and /dev/ptmx -> pts/ptmx;
//  4. masks spec.Linux.MaskedPaths (/dev/null over files, an empty
//     read-only tmpfs over directories) and makes ReadonlyPaths read-only;
//  5. pivot_root(".", "."), detaches the old root, remounts / read-only
//     when spec.Root.Readonly;
//  6. applies the process's identity on the thread that will execve (it
//     was locked to the main thread in an init function): rlimits,
//     no_new_privs, bounding set, keepcaps across setgroups/setgid/setuid
//     (per-thread syscalls), effective/permitted/inheritable and ambient
//     capabilities, umask, working directory (created if missing; entered
//     before and, if refused, after dropping privileges); HOME from the
//     image's /etc/passwd when the environment lacks it;
//  7. replies "ready" (or the failing step, returned by Create as
//     ErrSetup) and blocks reading the exec FIFO.
//
// Start writes the FIFO; the init resolves the executable with the
// process's PATH inside the container and calls execve with the spec's
// environment. If that fails, it writes the reason (`exec: "foo":
// executable file not found in $PATH`) to <state>/exec-error and exits 127
// (not found) or 126 (not executable); Start reports it as ErrExec.
//
// Identity is applied before "ready" rather than after Start, as runc
// does: a bad user or capability fails Create with a precise message, and
// Start stays a FIFO write and an execve.
//
// # The exec FIFO
//
// The init holds the FIFO open read-write (so its open never blocks) and
// close-on-exec. Start opens it write-only and non-blocking, which fails
// with ENXIO when no init holds it (dead, or already started), writes one
// byte, and waits for the hang-up a FIFO reader sees when the last writer,
// the init's descriptor, is closed by execve or exit: Start thus returns
// after the exec and reports exec failures synchronously, without polling
// or knowing the PID.
//
// # cgroup mounts
//
// On cgroup v2 a cgroup mount is a fresh cgroup2 mount in a new cgroup
// namespace, else a bind of the container's cgroup directory. On cgroup
// v1 and hybrid hosts it is a tmpfs with one directory per host hierarchy
// (named as on the host, including "unified"), each a bind of the
// container's cgroup in that hierarchy (from /proc/self/cgroup, read
// after placement) or, in a new cgroup namespace, a fresh mount of the
// hierarchy; co-mounted controllers get symlinks; the tmpfs is remounted
// read-only when asked.
//
// # Exec
//
// Exec (called by the runtime process for ExecSync, not the supervisor)
// forks a ModeExec re-execution from a thread that entered the container's
// PID namespace, still in the host's mount namespace so /proc/self/exe
// works. The helper joins the cgroup, IPC, UTS and network namespaces of
// the container's init on its exec thread, then unshare(CLONE_FS) and the
// mount namespace, applies the process's identity (copying the init's OOM
// score unless set) and execs the command; Exec waits for it and returns
// its exit code. The helper's sync socket is close-on-exec, so EOF means
// the command runs.
//
// # Pause
//
// StartPause starts a pod's pause process, PID 1 of a new PID namespace
// joined to the pod's network, IPC and UTS namespaces. On linux/amd64 it
// is a 271-byte static ELF generated from hand-assembled x86-64 code
// (block SIGCHLD, SIGTERM and SIGINT; reap with wait4(WNOHANG) until none
// is left; rt_sigtimedwait; exit_group(0) on SIGTERM or SIGINT) which runs
// in a few pages of memory; elsewhere it is a Go re-execution (ModePause).
//
// # Limits
//
// No user or time namespaces, joined mount namespaces, terminals, seccomp,
// AppArmor/SELinux labels or hooks: specs asking for the first four are
// rejected with ErrInvalidSpec, the rest are ignored. openat2 needs Linux
// 5.6. The re-executed binary's size and package initialisation are part
// of every container start; sandbox/cmd/podkit-init is a small binary for
// CreateConfig.Binary that keeps them to about a millisecond.
package nsinit
