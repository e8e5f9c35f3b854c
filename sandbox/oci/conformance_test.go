package oci_test

import (
	"testing"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/oci"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

// Every feature of the suite applies to runc and crun: the sandbox,
// network, logs, OOM (the supervisor reads the container cgroup's
// oom_kill counter, whoever made the process) and restart (the supervisor
// adopted the process) are the native runtime's; isolation, shared PID
// namespaces (joined by path: /proc/<pause>/ns/pid), security settings
// and exec are the OCI runtime's work from the same spec.
var allFeatures = sandboxtest.Features{
	Network: true, Exec: true, Events: true, Logs: true, OOM: true,
	Isolation: true, SharedPID: true, Security: true, Restart: true,
}

func TestConformanceRunc(t *testing.T) {
	conformance(t, "runc")
}

func TestConformanceCrun(t *testing.T) {
	requireCrunCgroups(t)
	conformance(t, "crun")
}

func conformance(t *testing.T, name string) {
	n := newNode(t)
	h := n.handler(t, name)
	sandboxtest.Run(t, sandboxtest.Env{
		NewRunner: func(t *testing.T) sandbox.SandboxRunner {
			r := n.runner(t, name, h)
			t.Cleanup(func() { r.Close() })
			return r
		},
		Reopen: func(t *testing.T, old sandbox.SandboxRunner) sandbox.SandboxRunner {
			old.(*oci.Runner).Close()
			r := n.runner(t, name, h)
			t.Cleanup(func() { r.Close() })
			return r
		},
		Rootfs: func(t *testing.T) []overlay.Mount {
			m, _ := testutil.TestboxMounts(t)
			return m
		},
		CgroupParent: n.podCgroup,
		Features:     allFeatures,
	})
}
