// Package sandboxtest is the conformance suite of the sandbox.SandboxRunner
// contract, like containerd's SnapshotterSuite: every runner podkit ships
// (the native runtime, the runc/crun adapter, the in-memory fake) runs it,
// and so can a user's:
//
//	func TestMyRunner(t *testing.T) {
//		sandboxtest.Run(t, sandboxtest.Env{
//			NewRunner: func(t *testing.T) sandbox.SandboxRunner { return mine.New(t.TempDir()) },
//			Rootfs:    func(t *testing.T) []overlay.Mount { m, _ := testutil.TestboxMounts(t); return m },
//			Features:  sandboxtest.Features{Logs: true, Exec: true},
//		})
//	}
//
// Containers run podkit's test program at /bin/testbox (see
// internal/testbox), whose subcommands exit with given codes, handle or
// ignore SIGTERM, print what they see, and so on. Each subtest gets a
// fresh runner and removes every sandbox it made, even when it fails.
//
// Runners differ in what they can do: Features says which groups of tests
// apply, and the others skip, naming the missing feature. Those are
// capability skips: a runner that needs root gates itself (NewRunner calls
// testutil.RequireRoot). The suite waits by polling with generous
// timeouts and never asserts how long anything took.
package sandboxtest

import (
	"testing"
	"time"

	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
)

// Testbox is where the test program lives in the container's rootfs.
const Testbox = "/bin/testbox"

// Env is what the suite needs from a runner's test.
type Env struct {
	// NewRunner returns a fresh runner for one subtest; the test cleans
	// it up (closes it, removes its state) with t.Cleanup. The suite
	// removes the sandboxes it created before those cleanups run.
	NewRunner func(t *testing.T) sandbox.SandboxRunner
	// Reopen returns a second runner over old's state, as a restarted
	// kubelet would open it (closing old first, as a crash would lose
	// it); it registers the new runner's cleanup. Needed by
	// Features.Restart.
	Reopen func(t *testing.T, old sandbox.SandboxRunner) sandbox.SandboxRunner
	// Rootfs returns the mounts of a fresh writable root filesystem
	// holding /bin/testbox, for one container (testutil.TestboxMounts).
	// Nil gives containers no rootfs, which only a fake accepts.
	Rootfs func(t *testing.T) []overlay.Mount
	// LogDir returns a fresh directory for one pod's logs (its
	// LogDirectory). Nil uses t.TempDir().
	LogDir func(t *testing.T) string
	// CgroupParent returns the cgroup of one pod (what
	// cgroups.Manager.EnsurePod returns), removed by the test's cleanup.
	// Nil leaves pods without cgroups; the OOM test needs one on a real
	// runner.
	CgroupParent func(t *testing.T) string
	// Features are what the runner supports.
	Features Features
	// Timeout bounds every wait for a state change (30s when zero).
	Timeout time.Duration
}

// Features are groups of behaviour a runner supports; the tests of the
// others are skipped.
type Features struct {
	// Network: sandboxes get IP addresses, different for each pod.
	Network bool
	// Exec: the runner is a sandbox.Execer.
	Exec bool
	// Events: the runner is a sandbox.EventSource.
	Events bool
	// Logs: containers' stdout and stderr land in CRI log files. Tests
	// that read a container's output need it too.
	Logs bool
	// OOM: a container over its memory limit ends OOMKilled.
	OOM bool
	// Isolation: real namespaces: a container's entrypoint is PID 1, pods
	// have their own hostnames, processes, mounts and loopback.
	Isolation bool
	// SharedPID: SandboxConfig.SharePID puts a pause process at PID 1 of
	// the pod's PID namespace, reaping orphans.
	SharedPID bool
	// Security: read-only rootfs, users and groups, capabilities,
	// no_new_privs and read-only volumes are enforced.
	Security bool
	// Restart: a runner reopened over the same state (Env.Reopen) adopts
	// the running containers and learns their exits.
	Restart bool
}

type feature int

const (
	always feature = iota
	featNetwork
	featExec
	featEvents
	featLogs
	featOOM
	featIsolation
	featSharedPID
	featSecurity
	featRestart
)

var featureNames = map[feature]string{
	featNetwork: "Network", featExec: "Exec", featEvents: "Events", featLogs: "Logs", featOOM: "OOM",
	featIsolation: "Isolation", featSharedPID: "SharedPID", featSecurity: "Security", featRestart: "Restart",
}

func (f Features) has(x feature) bool {
	switch x {
	case featNetwork:
		return f.Network
	case featExec:
		return f.Exec
	case featEvents:
		return f.Events
	case featLogs:
		return f.Logs
	case featOOM:
		return f.OOM
	case featIsolation:
		return f.Isolation
	case featSharedPID:
		return f.SharedPID
	case featSecurity:
		return f.Security
	case featRestart:
		return f.Restart
	}
	return true
}

type testCase struct {
	name string
	// needs are the features the test needs.
	needs []feature
	fn    func(h *harness)
}

var tests = []testCase{
	{"SandboxLifecycle", nil, testSandboxLifecycle},
	{"SandboxAlreadyExists", nil, testSandboxAlreadyExists},
	{"NotFound", nil, testNotFound},
	{"Invalid", nil, testInvalid},
	{"ContainerLifecycle", nil, testContainerLifecycle},
	{"ContainerAlreadyExists", nil, testContainerAlreadyExists},
	{"ExitCodes", nil, testExitCodes},
	{"StopHandledSignal", nil, testStopHandledSignal},
	{"StopIgnoredSignal", nil, testStopIgnoredSignal},
	{"StopExitedIsNoop", nil, testStopExited},
	{"StartNotCreated", nil, testStartNotCreated},
	{"CreateInStoppedSandbox", nil, testCreateInStoppedSandbox},
	{"StopPodSandboxKillsContainers", nil, testStopSandboxKills},
	{"RemovePodSandboxRemovesContainers", nil, testRemoveSandboxRemoves},
	{"ConcurrentPods", nil, testConcurrentPods},
	{"Logs", []feature{featLogs}, testLogs},
	{"Exec", []feature{featExec}, testExec},
	{"Events", []feature{featEvents}, testEvents},
	{"OOMKilled", []feature{featOOM}, testOOM},
	{"NetworkAddresses", []feature{featNetwork}, testNetwork},
	{"IsolationPID1", []feature{featIsolation, featLogs}, testPID1},
	{"IsolationLoopbackWithinPod", []feature{featIsolation, featLogs}, testLoopback},
	{"IsolationHostnames", []feature{featIsolation, featLogs}, testHostnames},
	{"IsolationProcesses", []feature{featIsolation, featLogs}, testProcesses},
	{"IsolationMounts", []feature{featIsolation, featLogs}, testMounts},
	{"SharedPIDPause", []feature{featSharedPID, featLogs}, testSharedPID},
	{"SharedPIDReapsOrphans", []feature{featSharedPID, featLogs}, testReapsOrphans},
	{"SecurityReadOnlyRootfs", []feature{featSecurity}, testReadOnlyRootfs},
	{"SecurityRunAsUser", []feature{featSecurity, featLogs}, testRunAsUser},
	{"SecurityCapDrop", []feature{featSecurity, featLogs}, testCapDrop},
	{"SecurityNoNewPrivs", []feature{featSecurity, featLogs}, testNoNewPrivs},
	{"SecurityVolumes", []feature{featSecurity}, testVolumes},
	{"Restart", []feature{featRestart}, testRestart},
}

// Run runs every test that env's features allow, each as a subtest with a
// fresh runner.
func Run(t *testing.T, env Env) {
	if env.NewRunner == nil {
		t.Fatal("sandboxtest: Env.NewRunner is nil")
	}
	if env.Timeout == 0 {
		env.Timeout = 30 * time.Second
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range tc.needs {
				if !env.Features.has(f) {
					t.Skipf("the runner lacks Features.%s", featureNames[f])
				}
			}
			tc.fn(newHarness(t, env))
		})
	}
}
