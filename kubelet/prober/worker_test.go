package prober

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

const testUID = "uid-1"

// workerEnv drives workers of one container by hand: their passes run in
// the test goroutine, with a fake clock and a scripted exec.
type workerEnv struct {
	m   *Manager
	clk *testclock.FakeClock
	fe  *fakeExec
	pe  *podEntry
	ce  *containerEntry
}

func newWorkerEnv(t *testing.T, c corev1.Container) *workerEnv {
	t.Helper()
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	fe := &fakeExec{clock: clk}
	m := newTestManager(t, fe, WithClock(clk))
	pe := &podEntry{uid: testUID, name: "default/web", cancel: func() {}, containers: map[string]*containerEntry{}}
	ce := &containerEntry{spec: c.DeepCopy()}
	for k, p := range map[Kind]*corev1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
		if p != nil {
			ce.results[k] = initialResult(k)
			ce.workers[k] = &worker{m: m, pod: pe, container: ce, name: c.Name, kind: k, spec: defaulted(p), trigger: make(chan struct{}, 1)}
		}
	}
	pe.containers[c.Name] = ce
	m.pods[testUID] = pe
	return &workerEnv{m: m, clk: clk, fe: fe, pe: pe, ce: ce}
}

func (e *workerEnv) start(id string) {
	e.m.UpdateContainer(testUID, "app", id, e.clk.Now(), "127.0.0.1")
}

func (e *workerEnv) state(k Kind) Result {
	e.m.mu.RLock()
	defer e.m.mu.RUnlock()
	return e.ce.results[k]
}

// updates returns the updates sent so far, formatted.
func (e *workerEnv) updates() []string {
	var out []string
	for {
		select {
		case u := <-e.m.updates:
			s := fmt.Sprintf("%s %s", u.Probe, u.Result)
			if u.Changed {
				s += " changed"
			}
			if u.Event != "" {
				s += " " + u.Event + ": " + u.Message
			}
			out = append(out, s)
		default:
			return out
		}
	}
}

func TestWorkerThresholds(t *testing.T) {
	const (
		fail = "Unhealthy: %s probe failed: boom"
	)
	tests := []struct {
		name      string
		kind      Kind
		success   int32
		failure   int32
		codes     []int32  // exit code of each pass
		states    []Result // state after each pass
		updates   [][]string
		extraPass bool // one more pass, expected not to probe
	}{
		{
			name: "readiness S=1 F=3", kind: Readiness, success: 1, failure: 3,
			codes:  []int32{0, 1, 1, 1, 0},
			states: []Result{Success, Success, Success, Failure, Success},
			updates: [][]string{
				{"Readiness Success changed"},
				{"Readiness Success " + fmt.Sprintf(fail, "Readiness")},
				{"Readiness Success " + fmt.Sprintf(fail, "Readiness")},
				{"Readiness Failure changed " + fmt.Sprintf(fail, "Readiness")},
				{"Readiness Success changed"},
			},
		},
		{
			name: "readiness S=2 F=1", kind: Readiness, success: 2, failure: 1,
			codes:  []int32{0, 0, 1, 0, 0},
			states: []Result{Failure, Success, Failure, Failure, Success},
			updates: [][]string{
				nil,
				{"Readiness Success changed"},
				{"Readiness Failure changed " + fmt.Sprintf(fail, "Readiness")},
				nil,
				{"Readiness Success changed"},
			},
		},
		{
			name: "liveness F=2 holds after failing", kind: Liveness, success: 1, failure: 2,
			codes:  []int32{1, 0, 1, 1},
			states: []Result{Success, Success, Success, Failure},
			updates: [][]string{
				{"Liveness Success " + fmt.Sprintf(fail, "Liveness")},
				nil,
				{"Liveness Success " + fmt.Sprintf(fail, "Liveness")},
				{"Liveness Failure changed " + fmt.Sprintf(fail, "Liveness")},
			},
			extraPass: true,
		},
		{
			name: "startup stops once started", kind: Startup, success: 1, failure: 3,
			codes:  []int32{1, 0},
			states: []Result{Unknown, Success},
			updates: [][]string{
				{"Startup Unknown " + fmt.Sprintf(fail, "Startup")},
				{"Startup Success changed"},
			},
			extraPass: true,
		},
		{
			name: "startup failure holds", kind: Startup, success: 1, failure: 1,
			codes:     []int32{1},
			states:    []Result{Failure},
			updates:   [][]string{{"Startup Failure changed " + fmt.Sprintf(fail, "Startup")}},
			extraPass: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := execProbe("check")
			p.SuccessThreshold, p.FailureThreshold = tt.success, tt.failure
			c := corev1.Container{Name: "app"}
			switch tt.kind {
			case Liveness:
				c.LivenessProbe = p
			case Readiness:
				c.ReadinessProbe = p
			case Startup:
				c.StartupProbe = p
			}
			e := newWorkerEnv(t, c)
			w := e.ce.workers[tt.kind]
			e.start("c1")
			for i, code := range tt.codes {
				e.fe.set(reply{code: code, stdout: "boom"})
				assert.Zero(t, w.pass(t.Context()))
				assert.Equal(t, i+1, e.fe.callCount(), "pass %d probes", i)
				assert.Equal(t, tt.states[i], e.state(tt.kind), "state after pass %d", i)
				assert.Equal(t, tt.updates[i], e.updates(), "updates of pass %d", i)
			}
			if tt.extraPass {
				w.pass(t.Context())
				assert.Equal(t, len(tt.codes), e.fe.callCount(), "no probe after the last pass")
				assert.Empty(t, e.updates())
			}
		})
	}
}

func TestWorkerInitialDelay(t *testing.T) {
	p := execProbe("check")
	p.InitialDelaySeconds = 5
	e := newWorkerEnv(t, corev1.Container{Name: "app", ReadinessProbe: p})
	w := e.ce.workers[Readiness]
	e.start("c1")

	assert.Equal(t, 5*time.Second, w.pass(t.Context()))
	e.clk.Step(3*time.Second + 500*time.Millisecond)
	assert.Equal(t, 1500*time.Millisecond, w.pass(t.Context()))
	assert.Zero(t, e.fe.callCount())
	e.clk.Step(1500 * time.Millisecond)
	assert.Zero(t, w.pass(t.Context()))
	require.Equal(t, 1, e.fe.callCount())
	assert.True(t, e.m.Ready(testUID, "app"))
}

func TestWorkerStartupGates(t *testing.T) {
	e := newWorkerEnv(t, corev1.Container{Name: "app",
		StartupProbe: execProbe("started"), LivenessProbe: execProbe("alive"), ReadinessProbe: execProbe("ready")})
	r, l, s := e.ce.workers[Readiness], e.ce.workers[Liveness], e.ce.workers[Startup]
	e.start("c1")
	<-r.trigger // the start poked every worker
	assert.False(t, e.m.Started(testUID, "app"))

	r.pass(t.Context())
	l.pass(t.Context())
	assert.Zero(t, e.fe.callCount(), "liveness and readiness wait for startup")

	s.pass(t.Context())
	require.Equal(t, 1, e.fe.callCount())
	assert.True(t, e.m.Started(testUID, "app"))
	assert.False(t, e.m.Ready(testUID, "app"), "readiness not probed yet")
	select {
	case <-r.trigger:
	default:
		t.Fatal("startup success did not poke the readiness worker")
	}

	r.pass(t.Context())
	l.pass(t.Context())
	assert.Equal(t, 3, e.fe.callCount())
	assert.Equal(t, []string{"ready"}, e.fe.calls[1].cmd)
	assert.True(t, e.m.Ready(testUID, "app"))
	s.pass(t.Context())
	assert.Equal(t, 3, e.fe.callCount(), "startup stops once started")
}

func TestWorkerNewContainerResets(t *testing.T) {
	p := execProbe("alive")
	p.FailureThreshold = 1
	e := newWorkerEnv(t, corev1.Container{Name: "app", LivenessProbe: p})
	w := e.ce.workers[Liveness]
	e.start("c1")
	e.fe.set(reply{code: 1})
	w.pass(t.Context())
	assert.Equal(t, Failure, e.state(Liveness))
	w.pass(t.Context())
	assert.Equal(t, 1, e.fe.callCount(), "on hold until a new container")

	e.start("c2")
	assert.Equal(t, Success, e.state(Liveness), "a new container starts alive")
	e.fe.set(reply{})
	w.pass(t.Context())
	assert.Equal(t, 2, e.fe.callCount())
	assert.Equal(t, "c2", e.fe.lastCall().id)
	e.updates()

	// A stale result for c1 is ignored.
	w.set(t.Context(), "c1", Failure, outcome{})
	assert.Equal(t, Success, e.state(Liveness))
	assert.Empty(t, e.updates())
}

func TestWorkerNotRunning(t *testing.T) {
	e := newWorkerEnv(t, corev1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	w := e.ce.workers[Readiness]
	w.pass(t.Context())
	assert.Zero(t, e.fe.callCount(), "no container yet")

	e.start("c1")
	w.pass(t.Context())
	assert.True(t, e.m.Ready(testUID, "app"))

	e.m.UpdateContainer(testUID, "app", "", time.Time{}, "")
	assert.False(t, e.m.Ready(testUID, "app"))
	assert.False(t, e.m.Started(testUID, "app"))
	w.pass(t.Context())
	assert.Equal(t, 1, e.fe.callCount(), "an exited container is not probed")
	assert.Equal(t, Failure, e.state(Readiness))
}

func TestWorkerDeletingPod(t *testing.T) {
	e := newWorkerEnv(t, corev1.Container{Name: "app", LivenessProbe: execProbe("alive"), ReadinessProbe: execProbe("ready")})
	e.start("c1")
	e.pe.deleting = true
	e.fe.set(reply{code: 1})
	e.ce.workers[Liveness].pass(t.Context())
	assert.Zero(t, e.fe.callCount(), "liveness is quiet while the pod terminates")
	assert.Equal(t, Success, e.state(Liveness))
	e.ce.workers[Readiness].pass(t.Context())
	assert.Equal(t, 1, e.fe.callCount(), "readiness keeps probing")
}

func TestWorkerErroredProbeIsNotCounted(t *testing.T) {
	p := execProbe("alive")
	p.FailureThreshold = 2
	e := newWorkerEnv(t, corev1.Container{Name: "app", LivenessProbe: p})
	w := e.ce.workers[Liveness]
	e.start("c1")
	e.fe.set(reply{code: 1})
	w.pass(t.Context())
	e.fe.set(reply{err: errors.New("runtime down")})
	w.pass(t.Context())
	e.fe.set(reply{code: 1})
	w.pass(t.Context())
	assert.Equal(t, []string{
		"Liveness Success Unhealthy: Liveness probe failed: ",
		"Liveness Success Unhealthy: Liveness probe errored and resulted in unknown state: runtime down",
		"Liveness Failure changed Unhealthy: Liveness probe failed: ",
	}, e.updates())
	assert.Equal(t, 1+maxProbeRetries+1, e.fe.callCount())
}

func TestWorkerCancelledProbeIsDiscarded(t *testing.T) {
	e := newWorkerEnv(t, corev1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	e.start("c1")
	ctx, cancel := contextWithCancel(t)
	cancel()
	e.ce.workers[Readiness].pass(ctx)
	assert.Equal(t, Failure, e.state(Readiness))
	assert.Empty(t, e.updates())
}
