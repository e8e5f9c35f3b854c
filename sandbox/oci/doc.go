// Package oci runs containers through an OCI runtime command line — runc
// or crun — for the pods of a runtime class: a native.Handler. It is the
// alternative to podkit's own container init at steps 14 and 17 of the
// birth sequence, selected per pod by its RuntimeClass handler
// (SandboxConfig.RuntimeHandler).
//
// # Division of labour
//
// The native runtime (package sandbox/native) keeps everything that is not
// the container process: it makes and pins the sandbox's namespaces, wires
// its network, writes its DNS files and /dev/shm, mounts the container's
// rootfs at <bundle>/rootfs, creates its cgroup (linux.cgroupsPath), writes
// <bundle>/config.json (package sandbox/ocispec, one generator for both
// runtimes, so pods behave alike whichever runs them) and supervises the
// process. A Runtime only turns four moments into command lines:
//
//	create  runc --root R --log <bundle>/runc-create.log --log-format json create --bundle B --pid-file P ID
//	start   runc --root R --log TMP --log-format json start ID
//	exec    runc --root R --log TMP --log-format json exec --process TMP.json --pid-file TMP.pid ID
//	delete  runc --root R --log TMP --log-format json delete --force ID
//
// The create command is run by the node's supervisor (a child subreaper)
// with the container's log pipes as stdout and stderr: runc hands them to
// the container process, which it leaves waiting for start and which the
// supervisor adopts when runc exits, so exit codes, OOM kills and CRI logs
// work exactly as for native containers. The others run in the caller's
// process.
//
// # Errors
//
// Every command logs to a file in JSON (--log, --log-format json); when a
// command fails, its error entries (not the container's output) become a
// *CommandError, e.g.
//
//	runc start 9c1e…: exit status 1: cannot start a container that has stopped
//
// runc and crun also print a fatal error to their stderr, which for create
// is the container's log pipe: the supervisor puts its tail into
// CreateContainer's error, so a missing entrypoint reads
// `runc create failed: unable to start container process: exec: "nope":
// executable file not found in $PATH` (runc) or "executable file `nope`
// not found in $PATH" (crun); the same line also lands in the container's
// CRI log (when it has one). Both runtimes look the entrypoint up at
// create time, so a container that cannot start fails CreateContainer
// (the native init fails StartContainer instead). CreateError adds the
// create command's JSON log and hints to such an error.
//
// Exec runs exec without --detach, with the command's stdout and stderr
// piped, and returns runc's exit status, which is the command's (128+N for
// a signal). A failure of the runtime itself (a missing executable, an
// exited container) exits 255 too, so the JSON log decides: error entries
// make an error, none make an exit code. When the context ends, the exec'd
// process (named by --pid-file, and only while the runtime, its parent,
// has not reaped it) is SIGKILLed, and the runtime exits with its status.
//
// Delete is idempotent: runc and crun both accept `delete --force` of an
// unknown container, and should the command fail anyway, `state` saying
// the container does not exist still counts as success.
//
// # Cgroups
//
// Only the cgroupfs driver is supported (crun gets --cgroup-manager
// cgroupfs; systemd cgroup flags are refused): cgroupsPath is an absolute
// path that the cgroups stage already created with the container's
// resources; the runtime writes the same values again and removes the
// container's leaf on delete. On a hybrid node (v1 controllers, cgroup2
// mounted at /sys/fs/cgroup/unified) runc and crun also place the
// container at the same path in the cgroup2 hierarchy.
//
// # crun on a hybrid cgroup node
//
// crun (1.8, and every release since hybrid support was dropped) refuses
// to create any container on a hybrid node whose cgroup2 hierarchy has a
// controller enabled:
//
//	cgroups in hybrid mode not supported, drop all controllers from cgroupv2
//
// A controller shows up in /sys/fs/cgroup/unified/cgroup.controllers when
// no v1 hierarchy is mounted for it — typically hugetlb, which systemd's
// hybrid setup does not mount. The fix is to mount the missing v1
// hierarchies, after which the kernel moves the controller out of cgroup2:
//
//	mount -o remount,rw /sys/fs/cgroup     # only if it is read-only
//	mkdir /sys/fs/cgroup/hugetlb
//	mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb
//	mount -o remount,ro /sys/fs/cgroup     # if it was read-only
//
// Crun (and New for a crun binary) checks this up front with
// CheckHybridCgroups and fails with ErrHybridCgroups and that hint, and a
// crun error carrying the message gets the hint appended, so an operator
// sees the cure next to the symptom. runc has no such restriction.
//
// # Using it
//
// Register a Runtime under each RuntimeClass handler name and give pods
// that name:
//
//	runc, err := oci.Runc()
//	crun, err := oci.Crun()
//	rt, err := native.New(ctx, native.Config{..., Handlers: map[string]native.Handler{"runc": runc, "crun": crun}})
//	rt.RunPodSandbox(ctx, &sandbox.SandboxConfig{..., RuntimeHandler: "runc"})
//
// or run every pod through one of them with NewRunner.
//
// The OCI runtime keeps its own state under Root (DefaultRoot/<name> by
// default, on a tmpfs); it is the only thing this package adds to the
// node, and deleting each container removes its entry.
package oci
