package native_test

import (
	"testing"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

func TestConformance(t *testing.T) {
	n := newNode(t)
	sandboxtest.Run(t, sandboxtest.Env{
		NewRunner: func(t *testing.T) sandbox.SandboxRunner {
			r := n.runtime(t)
			t.Cleanup(func() { r.Close() })
			return r
		},
		Reopen: func(t *testing.T, old sandbox.SandboxRunner) sandbox.SandboxRunner {
			old.(*native.Runtime).Close()
			r := n.runtime(t)
			t.Cleanup(func() { r.Close() })
			return r
		},
		Rootfs: func(t *testing.T) []overlay.Mount {
			m, _ := testutil.TestboxMounts(t)
			return m
		},
		CgroupParent: n.podCgroup,
		Features: sandboxtest.Features{
			Network: true, Exec: true, Events: true, Logs: true, OOM: true,
			Isolation: true, SharedPID: true, Security: true, Restart: true,
		},
	})
}
