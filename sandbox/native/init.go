package native

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

// Init runs the re-exec'd modes of this package — the supervisor, the
// container init, the exec helper and the Go pause — and never returns in
// them; in a normal process it returns at once. Call it first thing in
// main (and in TestMain of tests that use a Runtime).
func Init() {
	switch os.Getenv(nsinit.ModeEnv) {
	case supervisor.Mode:
		supervisor.Main(launch)
	case nsinit.ModeInit, nsinit.ModeExec, nsinit.ModePause:
		nsinit.Main()
	}
}

// launch is the supervisor's native launcher: it runs inside the
// supervisor, so the processes it forks are the supervisor's children.
func launch(ctx context.Context, spec supervisor.NativeSpec, stdout, stderr *os.File, place func(pid int) error) (int, error) {
	b, err := os.ReadFile(spec.SpecPath)
	if err != nil {
		return 0, fmt.Errorf("read spec: %w", err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("decode spec %s: %w", spec.SpecPath, err)
	}
	if s.Annotations[pauseAnnotation] == "true" {
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

// startNative releases a created native container into its entrypoint.
func startNative(ctx context.Context, dir string) error {
	return nsinit.Start(ctx, dir)
}
