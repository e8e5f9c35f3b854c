package native

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox"
)

// Handler runs the containers of one runtime class through an OCI runtime
// command line (runc, crun: see package sandbox/oci). The native runtime
// still owns the sandbox, the rootfs mount, the cgroup, the spec and the
// supervision; a Handler only creates, starts, execs into and deletes the
// container process.
type Handler interface {
	// CreateCommand is the command line that creates the container from
	// bundle b (its Dir holds config.json and the mounted rootfs) and
	// writes the container's PID to b.PidFile, leaving it waiting before
	// its entrypoint. The supervisor runs it with the container's log
	// pipes as stdout and stderr and adopts the container process.
	CreateCommand(b *Bundle) []string
	// Start releases the created container into its entrypoint.
	Start(ctx context.Context, b *Bundle) error
	// Exec runs p inside the running container and returns its exit code.
	Exec(ctx context.Context, b *Bundle, p *specs.Process, stdout, stderr io.Writer) (exitCode int, err error)
	// Delete removes what the OCI runtime keeps about the container; the
	// container has exited. Deleting an unknown container succeeds.
	Delete(ctx context.Context, b *Bundle) error
}

// Bundle is an OCI bundle of one container.
type Bundle struct {
	// ID is the container's ID, also its ID in the OCI runtime.
	ID string
	// Dir holds config.json and rootfs.
	Dir string
	// Spec is the generated spec (nil after a runtime restart: read
	// Dir/config.json).
	Spec *specs.Spec
	// PidFile is where CreateCommand writes the container's PID.
	PidFile string
	// Pid is the container process's PID when known.
	Pid int
}

// handler returns the Handler of a runtime class; nil means the native one.
func (r *Runtime) handler(name string) (Handler, error) {
	if name == "" || name == "native" {
		return nil, nil
	}
	h, ok := r.cfg.Handlers[name]
	if !ok {
		return nil, fmt.Errorf("runtime handler %q: %w", name, sandbox.ErrUnknownHandler)
	}
	return h, nil
}

// cgroupDirs lists the directories of a cgroup in every hierarchy, when the
// Manager can tell (cgroups.Tree can).
func (r *Runtime) cgroupDirs(path string) []string {
	if d, ok := r.cfg.Cgroups.(interface{ Dirs(string) []string }); ok {
		return d.Dirs(path)
	}
	return nil
}

// memoryDir picks the directory holding the memory controller's files.
func memoryDir(dirs []string) string {
	for _, d := range dirs {
		for _, f := range []string{"memory.oom_control", "memory.events"} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return d
			}
		}
	}
	for _, d := range dirs {
		if strings.Contains(d, "/memory/") {
			return d
		}
	}
	return ""
}

func procsFiles(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}
