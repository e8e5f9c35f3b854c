// Package launch is the native runtime's supervisor launcher: the function
// the node's supervisor calls to make the process of a native task (a
// container init waiting to be started, or a pod's pause process) from the
// OCI spec the runtime wrote.
//
// It sits between package native (which writes the specs and starts the
// supervisor) and the executables that run the supervisor: the podkit
// binary itself (native.Init) and the small podkit-init (sandbox/cmd/
// podkit-init). It links only the supervisor and the container init, not
// the runtime with its network and cgroup stages, so a supervisor run from
// podkit-init costs a few MiB of memory rather than the tens of MiB a
// re-exec of a binary linking client-go and the API server costs.
package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox/internal/nsinit"
	"github.com/podkit/podkit/sandbox/internal/supervisor"
)

// PauseAnnotation marks the spec of a pod's pause process: its only
// meaningful parts are the namespaces the pause joins (network, IPC, UTS)
// and the new PID namespace it becomes PID 1 of.
const PauseAnnotation = "io.podkit.sandbox/pause"

var _ supervisor.NativeLauncher = Native

// Native makes the process of a native task: it runs inside the
// supervisor, so the processes it forks are the supervisor's children.
func Native(ctx context.Context, spec supervisor.NativeSpec, stdout, stderr *os.File, place func(pid int) error) (int, error) {
	b, err := os.ReadFile(spec.SpecPath)
	if err != nil {
		return 0, fmt.Errorf("read spec: %w", err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("decode spec %s: %w", spec.SpecPath, err)
	}
	if s.Annotations[PauseAnnotation] == "true" {
		pc := nsinit.PauseConfig{StateDir: filepath.Dir(filepath.Dir(spec.StateDir)), Place: place, Binary: spec.InitBinary}
		if s.Linux != nil {
			for _, ns := range s.Linux.Namespaces {
				switch ns.Type {
				case specs.NetworkNamespace:
					pc.NetNS = ns.Path
				case specs.IPCNamespace:
					pc.IPCNS = ns.Path
				case specs.UTSNamespace:
					pc.UTSNS = ns.Path
				}
			}
		}
		return nsinit.StartPause(ctx, pc)
	}
	return nsinit.Create(ctx, nsinit.CreateConfig{
		Spec: &s, StateDir: spec.StateDir, Stdout: stdout, Stderr: stderr, Place: place, Binary: spec.InitBinary,
	})
}

// Main runs the re-exec'd modes of the native runtime — the supervisor,
// the container init, the exec helper and the Go pause — and never returns
// in them; in a normal process it returns at once.
func Main() {
	switch os.Getenv(nsinit.ModeEnv) {
	case supervisor.Mode:
		supervisor.Main(Native)
	case nsinit.ModeInit, nsinit.ModeExec, nsinit.ModePause:
		nsinit.Main()
	}
}
