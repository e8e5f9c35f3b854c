package prober

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/kubelet/status"
)

// The kubelet hands the manager to status.Generate as its Probes.
var _ status.Probes = (*Manager)(nil)

// deadlockGuard only turns a hang into a failure; nothing is timed.
const deadlockGuard = time.Minute

// liveEnv runs a manager with real worker goroutines on a fake clock; every
// finished worker pass is reported on passes so the test knows when the
// worker waits again.
type liveEnv struct {
	m      *Manager
	clk    *testclock.FakeClock
	fe     *fakeExec
	passes chan Kind
	seen   [numKinds]int
}

func newLiveEnv(t *testing.T) *liveEnv {
	t.Helper()
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	fe := &fakeExec{clock: clk}
	m := newTestManager(t, fe, WithClock(clk))
	e := &liveEnv{m: m, clk: clk, fe: fe, passes: make(chan Kind, 64)}
	m.afterPass = func(w *worker) { e.passes <- w.kind }
	return e
}

// pass waits for the next finished pass of a worker of kind k; passes of
// other kinds seen meanwhile are kept for later calls.
func (e *liveEnv) pass(t *testing.T, k Kind) {
	t.Helper()
	for e.seen[k] == 0 {
		select {
		case got := <-e.passes:
			e.seen[got]++
		case <-time.After(deadlockGuard):
			t.Fatalf("no %s pass", k)
		}
	}
	e.seen[k]--
}

func (e *liveEnv) update(t *testing.T) Update {
	t.Helper()
	select {
	case u := <-e.m.Results():
		return u
	case <-time.After(deadlockGuard):
		t.Fatal("no update")
		return Update{}
	}
}

func TestManagerReadinessFlips(t *testing.T) {
	e := newLiveEnv(t)
	p := execProbe("ready")
	p.PeriodSeconds, p.FailureThreshold = 5, 2
	pod := testPod("u1", corev1.Container{Name: "app", ReadinessProbe: p})
	e.m.AddPod(pod)
	e.pass(t, Readiness) // first pass: no container yet
	assert.False(t, e.m.Ready("u1", "app"))

	started := e.clk.Now()
	e.m.UpdateContainer("u1", "app", "c1", started, "10.1.0.5")
	e.pass(t, Readiness) // probed at once
	u := e.update(t)
	assert.Equal(t, Update{PodUID: "u1", ContainerName: "app", ContainerID: "c1", Probe: Readiness, Result: Success, Changed: true}, u)
	assert.True(t, e.m.Ready("u1", "app"))
	assert.True(t, e.m.Started("u1", "app"))
	assert.Equal(t, started, e.fe.lastCall().at, "no wait for the first tick")

	e.fe.set(reply{code: 1, stdout: "not yet"})
	e.clk.Step(5 * time.Second)
	e.pass(t, Readiness)
	u = e.update(t)
	assert.Equal(t, Update{PodUID: "u1", ContainerName: "app", ContainerID: "c1", Probe: Readiness, Result: Success,
		Event: EventUnhealthy, Message: "Readiness probe failed: not yet"}, u)
	assert.True(t, e.m.Ready("u1", "app"), "one failure is below the threshold")

	e.clk.Step(5 * time.Second)
	e.pass(t, Readiness)
	u = e.update(t)
	assert.Equal(t, Update{PodUID: "u1", ContainerName: "app", ContainerID: "c1", Probe: Readiness, Result: Failure, Changed: true,
		Event: EventUnhealthy, Message: "Readiness probe failed: not yet"}, u)
	assert.False(t, e.m.Ready("u1", "app"))
	assert.Equal(t, started.Add(10*time.Second), e.fe.lastCall().at)
}

func TestManagerLivenessRestart(t *testing.T) {
	e := newLiveEnv(t)
	p := execProbe("alive")
	p.PeriodSeconds, p.FailureThreshold = 1, 1
	e.m.AddPod(testPod("u1", corev1.Container{Name: "app", LivenessProbe: p}))
	e.pass(t, Liveness)
	e.fe.set(reply{code: 1, stdout: "dead"})
	e.m.UpdateContainer("u1", "app", "c1", e.clk.Now(), "")
	e.pass(t, Liveness)
	u := e.update(t)
	assert.Equal(t, Update{PodUID: "u1", ContainerName: "app", ContainerID: "c1", Probe: Liveness, Result: Failure, Changed: true,
		Event: EventUnhealthy, Message: "Liveness probe failed: dead"}, u)

	e.clk.Step(time.Second)
	e.pass(t, Liveness)
	assert.Equal(t, 1, e.fe.callCount(), "held until the container is restarted")

	// The kubelet restarted it.
	e.fe.set(reply{})
	e.m.UpdateContainer("u1", "app", "c2", e.clk.Now(), "")
	e.pass(t, Liveness)
	assert.Equal(t, 2, e.fe.callCount())
	assert.Equal(t, "c2", e.fe.lastCall().id)
	select {
	case u := <-e.m.Results():
		t.Fatalf("unexpected update %+v", u)
	default:
	}
}

func TestManagerInitialDelayWakesExactly(t *testing.T) {
	e := newLiveEnv(t)
	p := execProbe("ready")
	p.PeriodSeconds, p.InitialDelaySeconds = 30, 7
	e.m.AddPod(testPod("u1", corev1.Container{Name: "app", ReadinessProbe: p}))
	e.pass(t, Readiness)
	start := e.clk.Now()
	e.m.UpdateContainer("u1", "app", "c1", start, "")
	e.pass(t, Readiness)
	assert.Zero(t, e.fe.callCount())

	e.clk.Step(7 * time.Second)
	e.pass(t, Readiness)
	require.Equal(t, 1, e.fe.callCount())
	assert.Equal(t, start.Add(7*time.Second), e.fe.lastCall().at, "probed when the delay ended, not at the 30s tick")
	assert.True(t, e.update(t).Changed)
}

func TestManagerStartupThenReadiness(t *testing.T) {
	e := newLiveEnv(t)
	sp := execProbe("started")
	sp.PeriodSeconds, sp.FailureThreshold = 2, 30
	rp := execProbe("ready")
	rp.PeriodSeconds = 60
	e.m.AddPod(testPod("u1", corev1.Container{Name: "app", StartupProbe: sp, ReadinessProbe: rp}))
	e.pass(t, Startup)
	e.pass(t, Readiness)
	e.fe.set(reply{code: 1})
	e.m.UpdateContainer("u1", "app", "c1", e.clk.Now(), "")
	e.pass(t, Startup)
	assert.Equal(t, EventUnhealthy, e.update(t).Event)
	assert.False(t, e.m.Started("u1", "app"))

	e.fe.set(reply{})
	e.clk.Step(2 * time.Second)
	e.pass(t, Startup)
	u := e.update(t)
	assert.Equal(t, Startup, u.Probe)
	assert.Equal(t, Success, u.Result)
	assert.True(t, u.Changed)
	assert.True(t, e.m.Started("u1", "app"))

	// Readiness runs at once, not 60s later.
	u = e.update(t)
	assert.Equal(t, Update{PodUID: "u1", ContainerName: "app", ContainerID: "c1", Probe: Readiness, Result: Success, Changed: true}, u)
	assert.True(t, e.m.Ready("u1", "app"))
}

func TestManagerPods(t *testing.T) {
	e := newLiveEnv(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod("u1",
		corev1.Container{Name: "app", LivenessProbe: execProbe("a")},
		corev1.Container{Name: "plain"})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "init"},
		{Name: "sidecar", RestartPolicy: &always, ReadinessProbe: execProbe("s")},
	}
	e.m.AddPod(pod)
	e.m.AddPod(pod) // idempotent
	e.m.mu.RLock()
	require.Len(t, e.m.pods["u1"].containers, 3)
	assert.NotNil(t, e.m.pods["u1"].containers["sidecar"].workers[Readiness])
	assert.Nil(t, e.m.pods["u1"].containers["init"])
	e.m.mu.RUnlock()

	// A container without probes is ready once it runs.
	assert.False(t, e.m.Ready("u1", "plain"))
	e.m.UpdateContainer("u1", "plain", "p1", e.clk.Now(), "")
	assert.True(t, e.m.Ready("u1", "plain"))
	assert.True(t, e.m.Started("u1", "plain"))
	assert.False(t, e.m.Ready("u1", "sidecar"), "readiness not probed yet")
	assert.False(t, e.m.Ready("u2", "plain"), "unknown pod")
	assert.False(t, e.m.Ready("u1", "nope"), "unknown container")

	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	e.m.AddPod(deleting)
	e.m.mu.RLock()
	assert.True(t, e.m.pods["u1"].deleting)
	e.m.mu.RUnlock()

	e.m.RemovePod("u1")
	assert.False(t, e.m.Ready("u1", "plain"))
	e.m.UpdateContainer("u1", "plain", "p2", e.clk.Now(), "") // ignored
	e.m.RemovePod("u1")                                       // idempotent
}

func TestManagerClose(t *testing.T) {
	e := newLiveEnv(t)
	e.m.AddPod(testPod("u1", corev1.Container{Name: "app", ReadinessProbe: execProbe("r")}))
	e.pass(t, Readiness)
	require.NoError(t, e.m.Close())
	_, open := <-e.m.Results()
	assert.False(t, open, "Results is closed once every worker stopped")
	e.m.AddPod(testPod("u2", corev1.Container{Name: "app", ReadinessProbe: execProbe("r")}))
	e.m.mu.RLock()
	assert.Empty(t, e.m.pods)
	e.m.mu.RUnlock()
	require.NoError(t, e.m.Close())
}

func TestJitter(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	m, err := NewManager(Config{}, WithClock(clk), WithRand(func() float64 { return 0.25 }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	assert.Equal(t, 2500*time.Millisecond, m.jitter(10*time.Second), "a young manager spreads first probes")
	clk.Step(10 * time.Second)
	assert.Zero(t, m.jitter(10*time.Second), "not once it ran for a period")
	assert.Equal(t, 5*time.Second, m.jitter(20*time.Second))
}

func TestOptions(t *testing.T) {
	for name, opt := range map[string]Option{
		"clock":  WithClock(nil),
		"logger": WithLogger(nil),
		"rand":   WithRand(nil),
		"ua":     WithUserAgent(""),
		"buffer": WithUpdateBuffer(-1),
	} {
		_, err := NewManager(Config{}, opt)
		assert.Error(t, err, name)
	}
	m, err := NewManager(Config{}, WithUserAgent("podkit-probe/1"), WithUpdateBuffer(0))
	require.NoError(t, err)
	assert.Equal(t, "podkit-probe/1", m.opts.userAgent)
	assert.Equal(t, 0, cap(m.updates))
	require.NoError(t, m.Close())
}

func TestKindAndResultStrings(t *testing.T) {
	assert.Equal(t, []string{"Liveness", "Readiness", "Startup", "Unknown"},
		[]string{Liveness.String(), Readiness.String(), Startup.String(), Kind(9).String()})
	assert.Equal(t, []string{"Unknown", "Success", "Failure"}, []string{Unknown.String(), Success.String(), Failure.String()})
	var _ types.UID = Update{}.PodUID
}
