package native

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/internal/supervisor"
	"github.com/podkit/podkit/sandbox/ocispec"
)

// CreateContainer mounts the container's rootfs, creates its cgroup,
// generates its OCI spec and has the supervisor create its process, which
// waits before the entrypoint until StartContainer.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg *sandbox.ContainerConfig) (string, error) {
	if cfg == nil || cfg.Name == "" {
		return "", fmt.Errorf("container config needs a name: %w", sandbox.ErrInvalid)
	}
	if len(cfg.Rootfs) == 0 {
		return "", fmt.Errorf("container %q has no rootfs mounts: %w", cfg.Name, sandbox.ErrInvalid)
	}
	if _, err := ocispec.Command(cfg); err != nil {
		return "", fmt.Errorf("container %q: %w", cfg.Name, err)
	}
	stopSig, err := ocispec.ParseSignal(cfg.ImageConfig.StopSignal)
	if err != nil {
		return "", fmt.Errorf("container %q stop signal: %w: %w", cfg.Name, err, sandbox.ErrInvalid)
	}
	unlock, err := r.busy.lock(ctx, sandboxID)
	if err != nil {
		return "", err
	}
	defer unlock()
	sb, err := r.getSandbox(sandboxID)
	if err != nil {
		return "", err
	}
	if sb.State != sandbox.SandboxReady {
		return "", fmt.Errorf("sandbox %s is not ready: %w", sandboxID, sandbox.ErrNotReady)
	}
	r.warmCgroupAttach(sb.Config.CgroupParent)
	r.mu.Lock()
	for _, c := range r.containers {
		if c.SandboxID == sandboxID && c.Name == cfg.Name && c.Attempt == cfg.Attempt {
			r.mu.Unlock()
			return "", fmt.Errorf("container %q attempt %d in sandbox %s is %s: %w", cfg.Name, cfg.Attempt, sandboxID, c.ID, sandbox.ErrAlreadyExists)
		}
	}
	r.mu.Unlock()

	rec := &containerRecord{
		ID: newID(), SandboxID: sandboxID, Name: cfg.Name, Attempt: cfg.Attempt,
		Image: cfg.Image, ImageID: cfg.ImageID, Handler: sb.Config.RuntimeHandler,
		CreatedAt: r.now(), StopSignal: int(stopSig),
		Labels: cfg.Labels, Annotations: cfg.Annotations,
	}
	dir := r.containerDir(rec.ID)
	rec.Rootfs = filepath.Join(dir, "rootfs")
	if cfg.LogPath != "" && sb.Config.LogDirectory != "" {
		rec.LogPath = filepath.Join(sb.Config.LogDirectory, cfg.LogPath)
	}
	if err := os.MkdirAll(rec.Rootfs, 0o755); err != nil {
		return "", fmt.Errorf("container dir: %w", err)
	}
	// Recorded before the mount, so one write covers both: removal
	// unmounts (a no-op when the mount never happened).
	rec.RootfsMount = true
	if err := r.saveContainer(rec); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := r.createContainer(ctx, sb, rec, cfg); err != nil {
		if rerr := r.removeContainer(context.WithoutCancel(ctx), rec.ID); rerr != nil {
			r.log.Error("cleaning up a failed container", "container", rec.ID, "err", rerr)
		}
		return "", fmt.Errorf("create container %q in sandbox %s: %w", cfg.Name, sandboxID, err)
	}
	r.evts.publish(sandbox.ContainerEvent{ContainerID: rec.ID, SandboxID: sandboxID, Type: sandbox.ContainerCreated, Time: rec.CreatedAt})
	return rec.ID, nil
}

func (r *Runtime) createContainer(ctx context.Context, sb *sandboxRecord, rec *containerRecord, cfg *sandbox.ContainerConfig) error {
	t0 := time.Now()
	var tMount, tCgroup, tSpec time.Time
	defer func() {
		if r.log.Enabled(ctx, slog.LevelDebug) && !tSpec.IsZero() {
			r.log.Debug("container created", "container", rec.ID, "mount", tMount.Sub(t0), "cgroup", tCgroup.Sub(tMount),
				"spec", tSpec.Sub(tCgroup), "task", time.Since(tSpec))
		}
	}()
	if err := overlay.MountAll(cfg.Rootfs, rec.Rootfs); err != nil {
		return fmt.Errorf("mount rootfs: %w", err)
	}
	tMount = time.Now()
	var cgroupDirs []string
	if r.cfg.Cgroups != nil && sb.Config.CgroupParent != "" {
		p, err := r.cfg.Cgroups.EnsureContainer(ctx, sb.Config.CgroupParent, rec.ID, cfg.Resources)
		if err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		rec.Cgroup = p
		// Kept in memory only (the removal of a failed create finds it);
		// the record's next write, once the task exists, stores it. A crash
		// in between leaves the cgroup to the pod cgroup's removal, which
		// takes the container cgroups below it.
		r.remember(rec)
		cgroupDirs = r.cgroupDirs(p)
	}
	tCgroup = time.Now()
	in := ocispec.Input{
		SandboxID: sb.ID, ContainerID: rec.ID, Sandbox: &sb.Config, Container: cfg,
		RootfsPath: rec.Rootfs,
		NetNS:      sb.NetNS, IPCNS: sb.IPCNS, UTSNS: sb.UTSNS,
		HostNetwork: sb.Config.HostNetwork, HostUTS: sb.Config.HostNetwork, HostIPC: sb.Config.HostIPC, HostPID: sb.Config.HostPID,
		ShmPath: sb.Shm, CgroupsPath: rec.Cgroup,
	}
	if sb.Config.HostIPC {
		in.ShmPath = "/dev/shm"
	}
	if sb.PausePID > 0 {
		in.PIDNS = fmt.Sprintf("/proc/%d/ns/pid", sb.PausePID)
	}
	sdir := r.sandboxDir(sb.ID)
	for _, f := range []struct {
		dst  *string
		name string
	}{{&in.ResolvConfPath, "resolv.conf"}, {&in.HostsPath, "hosts"}, {&in.HostnamePath, "hostname"}} {
		if _, err := os.Stat(filepath.Join(sdir, f.name)); err == nil {
			*f.dst = filepath.Join(sdir, f.name)
		}
	}
	spec, err := ocispec.Generate(in)
	if err != nil {
		return err
	}
	rec.Process = spec.Process
	b := &Bundle{ID: rec.ID, Dir: r.containerDir(rec.ID), Spec: spec, PidFile: filepath.Join(r.containerDir(rec.ID), "pid")}
	if err := writeJSON(filepath.Join(b.Dir, "config.json"), spec); err != nil {
		return err
	}
	task := supervisor.TaskSpec{ID: rec.ID, LogPath: rec.LogPath, MemoryCgroupDir: memoryDir(cgroupDirs),
		Labels: map[string]string{"sandbox": sb.ID}}
	h, err := r.handler(rec.Handler)
	if err != nil {
		return err
	}
	if h == nil {
		task.Kind = supervisor.KindNative
		task.Native = &supervisor.NativeSpec{SpecPath: filepath.Join(b.Dir, "config.json"), StateDir: b.Dir, CgroupProcs: procsFiles(cgroupDirs), InitBinary: r.cfg.InitBinary}
	} else {
		task.Kind = supervisor.KindExec
		task.Exec = &supervisor.ExecSpec{Argv: h.CreateCommand(b), Dir: b.Dir, PidFile: b.PidFile}
	}
	tSpec = time.Now()
	if _, err := r.sup.CreateTask(ctx, task); err != nil {
		if ce, ok := h.(interface{ CreateError(*Bundle, error) error }); ok {
			return ce.CreateError(b, err) // the OCI runtime's own log and hints
		}
		return err
	}
	return r.saveContainer(rec)
}

// StartContainer releases a created container into its entrypoint.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	unlock, err := r.busy.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := r.getContainer(id)
	if err != nil {
		return err
	}
	st, err := r.sup.State(ctx, id)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if !rec.StartedAt.IsZero() || st.Exited {
		return fmt.Errorf("container %s is not in the created state: %w", id, sandbox.ErrNotReady)
	}
	h, err := r.handler(rec.Handler)
	if err != nil {
		return err
	}
	b := r.bundle(rec, st.Pid)
	// The entrypoint may exit before Start returns: take the start time
	// first, and hold the exit event back until Started is published.
	done := r.starting(id)
	defer done()
	startedAt := r.now()
	if h == nil {
		err = startNative(ctx, b.Dir)
	} else {
		err = h.Start(ctx, b)
	}
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	rec.StartedAt = startedAt
	if err := r.saveContainer(rec); err != nil {
		return err
	}
	r.evts.publish(sandbox.ContainerEvent{ContainerID: id, SandboxID: rec.SandboxID, Type: sandbox.ContainerStarted, Time: rec.StartedAt})
	return nil
}

// starting marks a start in flight until the returned func is called;
// waitStarted blocks until no start of id is in flight.
func (r *Runtime) starting(id string) func() {
	ch := make(chan struct{})
	r.mu.Lock()
	r.inflight[id] = ch
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.inflight, id)
		r.mu.Unlock()
		close(ch)
	}
}

func (r *Runtime) waitStarted(ctx context.Context, id string) {
	r.mu.Lock()
	ch := r.inflight[id]
	r.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

// StopContainer sends the stop signal, waits up to grace, then SIGKILLs.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	unlock, err := r.busy.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return r.stopContainer(ctx, id, grace)
}

func (r *Runtime) stopContainer(ctx context.Context, id string, grace time.Duration) error {
	rec, err := r.getContainer(id)
	if err != nil {
		return err
	}
	st, err := r.sup.State(ctx, id)
	if errors.Is(err, supervisor.ErrNotFound) {
		return nil // never created its process
	}
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	if st.Exited {
		return nil
	}
	if grace > 0 && !rec.StartedAt.IsZero() {
		if err := r.sup.Signal(ctx, id, syscall.Signal(rec.StopSignal)); err != nil {
			return fmt.Errorf("stop container %s: %w", id, err)
		}
		wctx, cancel := context.WithTimeout(ctx, grace)
		st, err = r.sup.Wait(wctx, id)
		cancel()
		if err == nil && st.Exited {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return r.killTask(ctx, id)
}

// killTask SIGKILLs a task and waits for its exit.
func (r *Runtime) killTask(ctx context.Context, id string) error {
	if err := r.sup.Signal(ctx, id, syscall.SIGKILL); err != nil && !errors.Is(err, supervisor.ErrNotFound) {
		return err
	}
	if _, err := r.sup.Wait(ctx, id); err != nil && !errors.Is(err, supervisor.ErrNotFound) {
		return err
	}
	return nil
}

func (r *Runtime) deleteTask(ctx context.Context, id string) error {
	if err := r.killTask(ctx, id); err != nil {
		return err
	}
	if err := r.sup.Delete(ctx, id); err != nil && !errors.Is(err, supervisor.ErrNotFound) {
		return err
	}
	return nil
}

// RemoveContainer kills the container if needed and removes everything of
// it: process record, rootfs mount, cgroup and state.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	unlock, err := r.busy.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return r.removeContainer(ctx, id)
}

func (r *Runtime) removeContainer(ctx context.Context, id string) error {
	rec, err := r.getContainer(id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil
	}
	if err := r.deleteTask(ctx, id); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	if h, _ := r.handler(rec.Handler); h != nil {
		if err := h.Delete(ctx, r.bundle(rec, 0)); err != nil {
			return fmt.Errorf("remove container %s: %w", id, err)
		}
	}
	if rec.RootfsMount {
		if err := overlay.Unmount(rec.Rootfs); err != nil {
			return fmt.Errorf("remove container %s: %w", id, err)
		}
	}
	if rec.Cgroup != "" {
		if err := r.cfg.Cgroups.Remove(ctx, rec.Cgroup); err != nil {
			return fmt.Errorf("remove container %s: %w", id, err)
		}
	}
	if err := os.RemoveAll(r.containerDir(id)); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	r.mu.Lock()
	delete(r.containers, id)
	r.mu.Unlock()
	r.evts.publish(sandbox.ContainerEvent{ContainerID: id, SandboxID: rec.SandboxID, Type: sandbox.ContainerDeleted, Time: r.now()})
	return nil
}

// ContainerStatus combines the runtime's record with the supervisor's view
// of the process.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (*sandbox.ContainerStatus, error) {
	rec, err := r.getContainer(id)
	if err != nil {
		return nil, err
	}
	out := &sandbox.ContainerStatus{
		ID: rec.ID, SandboxID: rec.SandboxID, Name: rec.Name, Attempt: rec.Attempt,
		CreatedAt: rec.CreatedAt, StartedAt: rec.StartedAt, Image: rec.Image, ImageID: rec.ImageID,
		LogPath: rec.LogPath, Labels: rec.Labels, Annotations: rec.Annotations,
		State: sandbox.ContainerStateCreated,
	}
	st, err := r.sup.State(ctx, id)
	switch {
	case errors.Is(err, supervisor.ErrNotFound):
		out.State = sandbox.ContainerStateUnknown
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("container %s status: %w", id, err)
	}
	switch {
	case st.Exited:
		out.State = sandbox.ContainerStateExited
		out.ExitCode, out.FinishedAt = st.ExitCode, st.FinishedAt
		switch {
		case st.OOMKilled:
			out.Reason = sandbox.ReasonOOMKilled
		case st.ExitCode == 0:
			out.Reason = sandbox.ReasonCompleted
		default:
			out.Reason = sandbox.ReasonError
		}
		out.Message = st.Message
		if b, err := os.ReadFile(filepath.Join(r.containerDir(id), "exec-error")); err == nil {
			out.Message = string(b)
		}
	case !rec.StartedAt.IsZero():
		out.State = sandbox.ContainerStateRunning
		out.PID = st.Pid
	default:
		out.PID = st.Pid
	}
	return out, nil
}

func (r *Runtime) bundle(rec *containerRecord, pid int) *Bundle {
	dir := r.containerDir(rec.ID)
	return &Bundle{ID: rec.ID, Dir: dir, PidFile: filepath.Join(dir, "pid"), Pid: pid}
}

// noSuchPID is above the kernel's largest pid_max (PID_MAX_LIMIT, 2^22):
// no process ever has it.
const noSuchPID = 1<<22 + 1

// warmCgroupAttach starts, in the background, a write of a pid no process
// has to the pod cgroup's cgroup.procs. The kernel takes the global
// cgroup_threadgroup_rwsem for writing before it looks the pid up (and
// fails with ESRCH, moving nothing); taking it after a quiet spell waits
// for an RCU grace period (~10-15 ms on the measured 2-vCPU VM, see
// docs/benchmarks.md). The container init's placement a few milliseconds
// later (mount, cgroup, spec, fork in between) then finds the lock in its
// writer-ready state and no longer waits the whole grace period. A host
// whose cgroup2 mount has favordynmods pays nothing either way.
func (r *Runtime) warmCgroupAttach(parent string) {
	if r.cfg.Cgroups == nil || parent == "" {
		return
	}
	procs := procsFiles(r.cgroupDirs(parent))
	if len(procs) == 0 {
		return
	}
	go func() { _ = os.WriteFile(procs[0], []byte(strconv.Itoa(noSuchPID)), 0) }()
}
