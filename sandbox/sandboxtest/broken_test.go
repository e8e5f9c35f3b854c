package sandboxtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

// brokenEnv names the variable that makes TestBrokenRunner run the suite
// against a runner with one flaw.
const brokenEnv = "SANDBOXTEST_BROKEN"

// flawed is the fake with one contract violation.
type flawed struct {
	*fake.Runner
	flaw string
}

func (f *flawed) RunPodSandbox(ctx context.Context, cfg *sandbox.SandboxConfig) (*sandbox.Sandbox, error) {
	if f.flaw == "duplicate-pods" {
		cp := *cfg
		cp.Pod.Attempt += uint32(time.Now().UnixNano() % 1000) // never the same pod twice
		cfg = &cp
	}
	return f.Runner.RunPodSandbox(ctx, cfg)
}

func (f *flawed) StopPodSandbox(ctx context.Context, id string) error {
	if f.flaw == "stop-not-idempotent" {
		sbs, _, _ := f.List(ctx)
		for _, s := range sbs {
			if s.ID == id && s.State == sandbox.SandboxNotReady {
				return errors.New("already stopped")
			}
		}
	}
	return f.Runner.StopPodSandbox(ctx, id)
}

func (f *flawed) StartContainer(ctx context.Context, id string) error {
	err := f.Runner.StartContainer(ctx, id)
	if f.flaw == "restart-allowed" && errors.Is(err, sandbox.ErrNotReady) {
		return nil
	}
	return err
}

func (f *flawed) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	if f.flaw == "no-grace" {
		grace = 0
	}
	return f.Runner.StopContainer(ctx, id, grace)
}

func (f *flawed) ContainerStatus(ctx context.Context, id string) (*sandbox.ContainerStatus, error) {
	st, err := f.Runner.ContainerStatus(ctx, id)
	if f.flaw == "exit-code-off" && err == nil && st.State == sandbox.ContainerStateExited {
		st.ExitCode++
	}
	return st, err
}

// TestBrokenRunner is the child TestSuiteCatchesFlaws runs.
func TestBrokenRunner(t *testing.T) {
	flaw := os.Getenv(brokenEnv)
	if flaw == "" {
		t.Skip("run by TestSuiteCatchesFlaws")
	}
	env := emulatedEnv(emulatedKernel{leakyPS: flaw == "leaky-ps", writableRootfs: flaw == "writable-rootfs"})
	newRunner := env.NewRunner
	env.NewRunner = func(t *testing.T) sandbox.SandboxRunner {
		return &flawed{Runner: newRunner(t).(*fake.Runner), flaw: flaw}
	}
	sandboxtest.Run(t, env)
}

// TestSuiteCatchesFlaws shows that the suite's tests can fail: each flaw
// of a runner makes the named test fail.
func TestSuiteCatchesFlaws(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("inside the child")
	}
	cases := []struct{ flaw, test string }{
		{"exit-code-off", "ExitCodes"},
		{"stop-not-idempotent", "SandboxLifecycle"},
		{"restart-allowed", "StartNotCreated"},
		{"no-grace", "StopHandledSignal"},
		{"duplicate-pods", "SandboxAlreadyExists"},
		{"leaky-ps", "IsolationProcesses"},
		{"writable-rootfs", "SecurityReadOnlyRootfs"},
	}
	for _, tc := range cases {
		t.Run(tc.flaw, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenRunner$/^"+tc.test+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+tc.flaw)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "the suite passed a runner with flaw %s:\n%s", tc.flaw, out)
			assert.Contains(t, string(out), "--- FAIL: TestBrokenRunner/"+tc.test+" ", "output:\n%s", out)
		})
	}
}
