package fake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

// TestConformance runs the sandbox conformance suite against the fake,
// with the features it imitates in memory.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, sandboxtest.Env{
		NewRunner: func(t *testing.T) sandbox.SandboxRunner {
			r, err := fake.New()
			require.NoError(t, err)
			return r
		},
		Reopen: func(t *testing.T, old sandbox.SandboxRunner) sandbox.SandboxRunner {
			return old.(*fake.Runner).Reopen()
		},
		Features: sandboxtest.Features{
			Network: true, Exec: true, Events: true, Logs: true, OOM: true, Restart: true,
		},
	})
}
