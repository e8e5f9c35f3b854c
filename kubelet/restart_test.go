package kubelet_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
)

// withScript makes the runtime run containers as script says.
func withScript(t *testing.T, e *env, script fake.Script) {
	t.Helper()
	r, err := fake.New(fake.WithClock(e.clock), fake.WithIDSeed(t.Name()), fake.WithBehavior(script))
	require.NoError(t, err)
	e.runtime = r
	e.cfg.Runtime = r
}

func backingOff(restarts int32, msg string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount == restarts && cs.State.Waiting != nil &&
			cs.State.Waiting.Reason == "CrashLoopBackOff" && cs.State.Waiting.Message == msg
	}
}

func TestCrashLoopBackOffDelays(t *testing.T) {
	e := newEnv(t)
	e.start()
	p := e.create(e.pod("crash", []string{"exit", "1"}))
	full := fmt.Sprintf("crash_default(%s)", p.UID)

	// The first restart is immediate; then 10s, doubling up to 5m.
	delays := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, d := range delays {
		msg := fmt.Sprintf("back-off %s restarting failed container=app pod=%s", d, full)
		got := e.waitPod("crash", msg, backingOff(int32(i+1), msg))
		cs := containerStatus(got, "app")
		require.NotNil(t, cs.LastTerminationState.Terminated)
		assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, "Error", cs.LastTerminationState.Terminated.Reason)
		assert.Equal(t, corev1.PodRunning, got.Status.Phase, "restarting containers keep the pod Running")
		e.step(d)
	}
	e.waitEvent("crash", "Warning BackOff Back-off restarting failed container app in pod "+full)

	// Only the newest exited attempt is kept.
	e.waitPod("crash", "restart 8", func(p *corev1.Pod) bool { return containerStatus(p, "app").RestartCount >= 8 })
	sbs, ctrs, err := e.runtime.List(t.Context())
	require.NoError(t, err)
	assert.Len(t, sbs, 1)
	assert.LessOrEqual(t, len(ctrs), 2)
}

func TestCrashLoopBackOffResetsAfterALongRun(t *testing.T) {
	e := newEnv(t)
	// Attempts 0-2 crash at once; attempt 3 runs 11 minutes, then crashes.
	withScript(t, e, func(_ *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
		b := fake.Behavior{Exits: true, ExitCode: 1}
		if c.Attempt == 3 {
			b.RunFor = 11 * time.Minute
		}
		return b
	})
	e.start()
	p := e.create(e.pod("crash", []string{"crash"}))
	full := fmt.Sprintf("crash_default(%s)", p.UID)
	e.waitPod("crash", "back-off 10s", backingOff(1, "back-off 10s restarting failed container=app pod="+full))
	e.step(10 * time.Second)
	e.waitPod("crash", "back-off 20s", backingOff(2, "back-off 20s restarting failed container=app pod="+full))
	e.step(20 * time.Second)
	e.waitPod("crash", "attempt 3 running", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount == 3 && cs.State.Running != nil
	})
	e.step(11 * time.Minute)
	// More than 10 minutes after the last restart: back to 10s.
	e.waitPod("crash", "back-off reset", backingOff(4, "back-off 10s restarting failed container=app pod="+full))
}

func TestLivenessFailureRestartsTheContainer(t *testing.T) {
	e := newEnv(t)
	// The container answers probes for 3 seconds after it starts.
	withScript(t, e, func(_ *sandbox.SandboxConfig, _ *sandbox.ContainerConfig) fake.Behavior {
		return fake.Behavior{Ready: func(running time.Duration) bool { return running < 3*time.Second }}
	})
	e.start()
	pod := e.pod("live", []string{"sleep", "inf"})
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	e.create(pod)
	p := e.waitPod("live", "Running", running)
	first := containerStatus(p, "app").ContainerID

	p = e.stepUntil("live", "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount == 1 && cs.State.Running != nil
	})
	cs := containerStatus(p, "app")
	assert.NotEqual(t, first, cs.ContainerID)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, first, cs.LastTerminationState.Terminated.ContainerID)
	e.waitEventPrefix("live", "Warning Unhealthy Liveness probe failed: ")
	e.waitEvent("live", "Normal Killing Container app failed liveness probe, will be restarted")
}

func TestReadinessFlipsReady(t *testing.T) {
	e := newEnv(t)
	var healthy atomic.Bool
	healthy.Store(true)
	withScript(t, e, func(_ *sandbox.SandboxConfig, _ *sandbox.ContainerConfig) fake.Behavior {
		return fake.Behavior{Ready: func(time.Duration) bool { return healthy.Load() }}
	})
	e.start()
	pod := e.pod("ready", []string{"sleep", "inf"})
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	e.create(pod)
	e.waitPod("ready", "Ready", ready)

	healthy.Store(false)
	notReady := func(p *corev1.Pod) bool {
		c := condition(p, corev1.PodReady)
		return c != nil && c.Status == corev1.ConditionFalse
	}
	p := e.stepUntil("ready", "not Ready", notReady)
	c := condition(p, corev1.PodReady)
	assert.Equal(t, "ContainersNotReady", c.Reason)
	assert.Equal(t, "containers with unready status: [app]", c.Message)
	cr := condition(p, corev1.ContainersReady)
	assert.Equal(t, corev1.ConditionFalse, cr.Status)
	assert.False(t, containerStatus(p, "app").Ready)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	e.waitEventPrefix("ready", "Warning Unhealthy Readiness probe failed: ")

	healthy.Store(true)
	e.stepUntil("ready", "Ready again", ready)
	assert.Zero(t, containerStatus(e.get("ready"), "app").RestartCount, "readiness never restarts")
}

// stepUntil steps the fake clock a second at a time until cond holds.
func (e *env) stepUntil(name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if p := e.get(name); cond(p) {
			return p
		}
		e.step(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("pod %s never got %s:\n%s", name, what, dump(e.get(name)))
	return nil
}

func TestOOMKilledRestarts(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("oom", []string{"alloc", "100"})
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	e.create(pod)
	p := e.waitPod("oom", "restarted after an OOM kill", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
	})
	last := containerStatus(p, "app").LastTerminationState.Terminated
	assert.Equal(t, "OOMKilled", last.Reason)
	assert.Equal(t, int32(137), last.ExitCode)
	assert.Equal(t, corev1.PodQOSBurstable, p.Status.QOSClass)
}

func TestActiveDeadlineFailsThePod(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("deadline", []string{"sleep", "inf"})
	pod.Spec.ActiveDeadlineSeconds = ptr(int64(30))
	e.create(pod)
	e.waitPod("deadline", "Running", running)
	e.step(31 * time.Second)
	p := e.waitPod("deadline", "Failed", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return p.Status.Phase == corev1.PodFailed && cs != nil && cs.State.Terminated != nil
	})
	assert.Equal(t, "DeadlineExceeded", p.Status.Reason)
	assert.Equal(t, "Pod was active on the node longer than the specified deadline", p.Status.Message)
	assert.Equal(t, corev1.ConditionFalse, condition(p, corev1.PodReady).Status)
	e.waitEvent("deadline", "Normal DeadlineExceeded Pod was active on the node longer than the specified deadline")
	e.waitEvent("deadline", "Normal Killing Stopping container app")
	// A finished pod keeps its container (for status and logs) but runs nothing.
	_, ctrs, err := e.runtime.List(t.Context())
	require.NoError(t, err)
	for _, c := range ctrs {
		assert.Equal(t, sandbox.ContainerStateExited, c.State)
	}
}

func TestPostStartHookFailureKillsTheContainer(t *testing.T) {
	e := newEnv(t)
	withScript(t, e, func(s *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
		b := fake.Interpret(s, c)
		b.ExecResults = map[string]sandbox.ExecResult{"setup": {ExitCode: 2, Stderr: []byte("no config")}}
		return b
	})
	e.start()
	pod := e.pod("hook", []string{"sleep", "inf"})
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"setup"}}}}
	created := e.create(pod)
	e.waitEvent("hook", "Warning FailedPostStartHook PostStartHook failed")
	e.waitEvent("hook", "Normal Killing FailedPostStartHook")
	p := e.waitPod("hook", "PostStartHookError or a restart", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && (cs.State.Waiting.Reason == "PostStartHookError" || cs.State.Waiting.Reason == "CrashLoopBackOff")
	})
	cs := containerStatus(p, "app")
	if cs.State.Waiting.Reason == "PostStartHookError" {
		want := fmt.Sprintf(`Exec lifecycle hook ([setup]) for Container "app" in Pod "hook_default(%s)" failed - error: command 'setup' exited with 2: no config, message: "no config"`, created.UID)
		assert.Equal(t, want, cs.State.Waiting.Message)
	}
	assert.True(t, strings.HasPrefix(dump(p), "phase=Running"), dump(p))
}
