package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/internal/launch"
	"github.com/podkit/podkit/sandbox/internal/nsinit"
	"github.com/podkit/podkit/sandbox/internal/supervisor"
)

// maxExecOutput caps what ExecSync keeps of each stream, as the CRI does
// for exec probes (their output is only a message).
const maxExecOutput = 16 << 20

// ExecSync runs cmd in a running container with the container's process
// settings and waits for it.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*sandbox.ExecResult, error) {
	if len(cmd) == 0 {
		return nil, fmt.Errorf("exec in container %s: empty command: %w", id, sandbox.ErrInvalid)
	}
	rec, err := r.getContainer(id)
	if err != nil {
		return nil, err
	}
	st, err := r.sup.State(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, err)
	}
	if st.Exited || rec.StartedAt.IsZero() || rec.Process == nil {
		return nil, fmt.Errorf("exec in container %s: not running: %w", id, sandbox.ErrNotReady)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p := *rec.Process
	p.Args = cmd
	p.Terminal = false
	var stdout, stderr capped
	code := 0
	h, err := r.handler(rec.Handler)
	if err != nil {
		return nil, err
	}
	if h == nil {
		code, err = nsinit.Exec(ctx, nsinit.ExecConfig{
			Pid: st.Pid, Process: &p, Stdout: &stdout, Stderr: &stderr,
			Place: r.placer(rec.Cgroup), Binary: r.initBinary(),
		})
	} else {
		code, err = h.Exec(ctx, r.bundle(rec, st.Pid), &p, &stdout, &stderr)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0 {
			return nil, fmt.Errorf("exec in container %s: command %q timed out after %s: %w", id, cmd, timeout, context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("exec in container %s: %w", id, err)
	}
	return &sandbox.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(code)}, nil
}

// placer returns a function that moves a process into the cgroup at path.
func (r *Runtime) placer(path string) func(pid int) error {
	if path == "" {
		return nil
	}
	files := procsFiles(r.cgroupDirs(path))
	return func(pid int) error { return writeProcs(files, pid) }
}

func writeProcs(files []string, pid int) error {
	for _, f := range files {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("add %d to %s: %w", pid, filepath.Dir(f), err)
		}
	}
	return nil
}

// capped is a buffer that drops output past maxExecOutput.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxExecOutput - c.Len(); room < len(p) {
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

var _ io.Writer = (*capped)(nil)

// Events streams container state changes: creations, starts and removals
// from this runtime, exits from the supervisor (which sees every exit, also
// those that happen while no runtime is connected).
func (r *Runtime) Events(ctx context.Context) (<-chan sandbox.ContainerEvent, error) {
	return r.evts.subscribe(ctx)
}

// forwardExits turns the supervisor's exit stream into ContainerStopped
// events until ctx ends.
func (r *Runtime) forwardExits(ctx context.Context) {
	for {
		ch, err := r.sup.Events(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.log.Warn("supervisor events", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for st := range ch {
			r.waitStarted(ctx, st.ID) // Started goes out before Stopped
			rec, err := r.getContainer(st.ID)
			if err != nil {
				continue // the pause process, or a removed container
			}
			r.evts.publish(sandbox.ContainerEvent{ContainerID: st.ID, SandboxID: rec.SandboxID, Type: sandbox.ContainerStopped, Time: st.FinishedAt})
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// startPause has the supervisor start the sandbox's pause process: PID 1
// of a new PID namespace, in the sandbox's other namespaces.
func (r *Runtime) startPause(ctx context.Context, rec *sandboxRecord) error {
	spec := &specs.Spec{
		Version:     specs.Version,
		Annotations: map[string]string{launch.PauseAnnotation: "true"},
		Linux:       &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}}},
	}
	for _, ns := range []struct {
		t    specs.LinuxNamespaceType
		path string
	}{{specs.NetworkNamespace, rec.NetNS}, {specs.IPCNamespace, rec.IPCNS}, {specs.UTSNamespace, rec.UTSNS}} {
		if ns.path != "" {
			spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: ns.t, Path: ns.path})
		}
	}
	dir := r.sandboxDir(rec.ID)
	if err := writeJSON(filepath.Join(dir, "pause.json"), spec); err != nil {
		return err
	}
	id := "pause-" + rec.ID
	rec.PauseTask = id
	if err := r.saveSandbox(rec); err != nil {
		return err
	}
	var procs []string
	if r.cfg.Cgroups != nil && rec.Config.CgroupParent != "" {
		procs = procsFiles(r.cgroupDirs(rec.Config.CgroupParent))
	}
	st, err := r.sup.CreateTask(ctx, supervisor.TaskSpec{
		ID: id, Kind: supervisor.KindNative,
		Native: &supervisor.NativeSpec{SpecPath: filepath.Join(dir, "pause.json"), StateDir: dir, CgroupProcs: procs, InitBinary: r.cfg.InitBinary},
		Labels: map[string]string{"sandbox": rec.ID, "role": "pause"},
	})
	if err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	rec.PausePID = st.Pid
	return r.saveSandbox(rec)
}

// initBinary is the executable for nsinit's child modes.
func (r *Runtime) initBinary() string {
	if r.cfg.InitBinary != "" {
		return r.cfg.InitBinary
	}
	return r.cfg.Binary
}
