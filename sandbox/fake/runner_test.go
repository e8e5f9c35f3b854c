package fake_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newRunner(t testing.TB, opts ...fake.Option) *fake.Runner {
	t.Helper()
	r, err := fake.New(opts...)
	require.NoError(t, err)
	return r
}

var podSeq atomic.Int64

// podCfg describes a pod no other call describes.
func podCfg(name string) *sandbox.SandboxConfig {
	uid := "uid-" + strconv.FormatInt(podSeq.Add(1), 10)
	return &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: name, Namespace: "ns", UID: uid}}
}

func ctrCfg(name string, args ...string) *sandbox.ContainerConfig {
	return &sandbox.ContainerConfig{Name: name, Command: []string{"/bin/testbox"}, Args: args}
}

// startPod runs a sandbox with one started container.
func startPod(t testing.TB, r *fake.Runner, ctr *sandbox.ContainerConfig) (sandboxID, id string) {
	t.Helper()
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, podCfg("p"))
	require.NoError(t, err)
	id, err = r.CreateContainer(ctx, sb.ID, ctr)
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	return sb.ID, id
}

func status(t testing.TB, r *fake.Runner, id string) *sandbox.ContainerStatus {
	t.Helper()
	st, err := r.ContainerStatus(context.Background(), id)
	require.NoError(t, err)
	return st
}

func TestVirtualTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	r := newRunner(t, fake.WithClock(clk))
	_, id := startPod(t, r, ctrCfg("c", "sleep", "10"))
	st := status(t, r, id)
	assert.Equal(t, sandbox.ContainerStateRunning, st.State)
	assert.Equal(t, epoch, st.StartedAt)

	clk.Step(9 * time.Second)
	assert.Equal(t, sandbox.ContainerStateRunning, status(t, r, id).State)
	clk.Step(5 * time.Second) // past the deadline
	st = status(t, r, id)
	assert.Equal(t, sandbox.ContainerStateExited, st.State)
	assert.Equal(t, epoch.Add(10*time.Second), st.FinishedAt, "finished exactly RunFor after the start")
	assert.Equal(t, sandbox.ReasonCompleted, st.Reason)
	assert.False(t, clk.HasWaiters(), "no timer left")
}

func TestVirtualGrace(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	r := newRunner(t, fake.WithClock(clk))
	_, id := startPod(t, r, ctrCfg("c", "ignore-term"))
	done := make(chan error, 1)
	go func() { done <- r.StopContainer(context.Background(), id, 30*time.Second) }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "StopContainer waits on the clock")
	clk.Step(29 * time.Second)
	assert.Equal(t, sandbox.ContainerStateRunning, status(t, r, id).State, "SIGTERM ignored")
	clk.Step(time.Second)
	require.NoError(t, <-done)
	st := status(t, r, id)
	assert.Equal(t, int32(137), st.ExitCode)
	assert.Equal(t, epoch.Add(30*time.Second), st.FinishedAt)
}

func TestStopSemantics(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		stopSignal string
		grace      time.Duration
		code       int32
		reason     string
	}{
		{"dies of SIGTERM", []string{"sleep", "inf"}, "", time.Minute, 143, sandbox.ReasonError},
		{"dies of the image's stop signal", []string{"sleep", "inf"}, "SIGQUIT", time.Minute, 131, sandbox.ReasonError},
		{"handles SIGTERM", []string{"term-exit", "0"}, "", time.Minute, 0, sandbox.ReasonCompleted},
		{"handles SIGTERM with a code", []string{"term-exit", "9"}, "", time.Minute, 9, sandbox.ReasonError},
		{"term-exit dies of another signal", []string{"term-exit", "0"}, "SIGINT", time.Minute, 130, sandbox.ReasonError},
		{"no grace kills", []string{"term-exit", "0"}, "", 0, 137, sandbox.ReasonError},
		{"ignore-term dies of another signal", []string{"ignore-term"}, "SIGUSR1", time.Minute, 138, sandbox.ReasonError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, fake.WithClock(clocktesting.NewFakeClock(epoch)))
			cfg := ctrCfg("c", tc.args...)
			cfg.ImageConfig.StopSignal = tc.stopSignal
			_, id := startPod(t, r, cfg)
			require.NoError(t, r.StopContainer(context.Background(), id, tc.grace))
			st := status(t, r, id)
			assert.Equal(t, sandbox.ContainerStateExited, st.State)
			assert.Equal(t, tc.code, st.ExitCode)
			assert.Equal(t, tc.reason, st.Reason)
			assert.Equal(t, epoch, st.FinishedAt)
			assert.Zero(t, st.PID, "no PID once exited")
		})
	}
}

func TestStopCreatedAndCancel(t *testing.T) {
	ctx := context.Background()
	r := newRunner(t, fake.WithClock(clocktesting.NewFakeClock(epoch)))
	sb, err := r.RunPodSandbox(ctx, podCfg("p"))
	require.NoError(t, err)
	id, err := r.CreateContainer(ctx, sb.ID, ctrCfg("c", "sleep", "inf"))
	require.NoError(t, err)
	require.NoError(t, r.StopContainer(ctx, id, time.Second))
	st := status(t, r, id)
	assert.Equal(t, int32(137), st.ExitCode, "a created container is killed")
	assert.True(t, st.StartedAt.IsZero())

	_, id = startPod(t, r, ctrCfg("c", "ignore-term"))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = r.StopContainer(cctx, id, time.Minute)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, sandbox.ContainerStateRunning, status(t, r, id).State)
}

func TestInvalidStopSignal(t *testing.T) {
	ctx := context.Background()
	r := newRunner(t)
	sb, err := r.RunPodSandbox(ctx, podCfg("p"))
	require.NoError(t, err)
	cfg := ctrCfg("c", "sleep", "inf")
	cfg.ImageConfig.StopSignal = "SIGNOPE"
	_, err = r.CreateContainer(ctx, sb.ID, cfg)
	assert.ErrorIs(t, err, sandbox.ErrInvalid)
}

func TestScript(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("exec format error")
	clk := clocktesting.NewFakeClock(epoch)
	r := newRunner(t, fake.WithClock(clk), fake.WithBehavior(func(sb *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
		switch c.Name {
		case "broken":
			return fake.Behavior{StartError: boom}
		case "web":
			return fake.Behavior{
				Stdout:      []string{"serving"},
				ExecResults: map[string]sandbox.ExecResult{"cat /ready": {Stdout: []byte("yes\n")}},
				Ready:       fake.ReadyAfter(5 * time.Second),
			}
		case "crashy":
			return fake.Behavior{RunFor: 3 * time.Second, ExitCode: 2}
		case "hog":
			return fake.Behavior{RunFor: time.Second, OOM: true}
		}
		return fake.Interpret(sb, c)
	}))
	sb, err := r.RunPodSandbox(ctx, podCfg("p"))
	require.NoError(t, err)
	create := func(name string) string {
		id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{Name: name, Command: []string{"/app"}})
		require.NoError(t, err)
		return id
	}

	broken := create("broken")
	err = r.StartContainer(ctx, broken)
	assert.ErrorIs(t, err, boom)
	st := status(t, r, broken)
	assert.Equal(t, sandbox.ContainerStateExited, st.State)
	assert.Equal(t, int32(128), st.ExitCode)
	assert.Equal(t, fake.ReasonStartError, st.Reason)
	assert.Equal(t, boom.Error(), st.Message)

	web := create("web")
	require.NoError(t, r.StartContainer(ctx, web))
	out, err := r.Output(web)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, fake.LogLine{Time: epoch, Stream: "stdout", Text: "serving"}, out[0])
	res, err := r.ExecSync(ctx, web, []string{"cat", "/ready"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "yes\n", string(res.Stdout))
	probe := []string{"/bin/check"}
	res, err = r.ExecSync(ctx, web, probe, time.Second)
	require.NoError(t, err)
	assert.Equal(t, int32(1), res.ExitCode, "not ready yet")
	ready, err := r.Ready(ctx, web)
	require.NoError(t, err)
	assert.False(t, ready)
	clk.Step(5 * time.Second)
	res, err = r.ExecSync(ctx, web, probe, time.Second)
	require.NoError(t, err)
	assert.Equal(t, int32(0), res.ExitCode, "ready after 5s")
	ready, err = r.Ready(ctx, web)
	require.NoError(t, err)
	assert.True(t, ready)
	res, err = r.ExecSync(ctx, web, []string{"hostname"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "p\n", string(res.Stdout), "the pod's name stands in for a missing Hostname")

	crashy, hog := create("crashy"), create("hog")
	require.NoError(t, r.StartContainer(ctx, crashy))
	require.NoError(t, r.StartContainer(ctx, hog))
	clk.Step(3 * time.Second)
	st = status(t, r, crashy)
	assert.Equal(t, int32(2), st.ExitCode)
	assert.Equal(t, epoch.Add(8*time.Second), st.FinishedAt)
	st = status(t, r, hog)
	assert.Equal(t, int32(137), st.ExitCode)
	assert.Equal(t, sandbox.ReasonOOMKilled, st.Reason)
	ready, err = r.Ready(ctx, hog)
	require.NoError(t, err)
	assert.False(t, ready, "an exited container is not ready")
	_, err = r.ExecSync(ctx, hog, probe, time.Second)
	assert.ErrorIs(t, err, sandbox.ErrNotReady)
}

func TestExitInjection(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	r := newRunner(t, fake.WithClock(clk))
	_, id := startPod(t, r, ctrCfg("c", "sleep", "100"))
	clk.Step(time.Second)
	require.NoError(t, r.Exit(ctx, id, 42))
	st := status(t, r, id)
	assert.Equal(t, int32(42), st.ExitCode)
	assert.Equal(t, sandbox.ReasonError, st.Reason)
	assert.Equal(t, epoch.Add(time.Second), st.FinishedAt)
	assert.False(t, clk.HasWaiters(), "the exit timer is stopped")
	assert.ErrorIs(t, r.Exit(ctx, id, 0), sandbox.ErrNotReady)
	assert.ErrorIs(t, r.Exit(ctx, "nope", 0), sandbox.ErrNotFound)
}

func TestFailNextAndCalls(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	r := newRunner(t, fake.WithClock(clk))
	boom := errors.New("disk full")
	r.FailNext("RunPodSandbox", boom)
	r.FailNext("RunPodSandbox", sandbox.ErrUnknownHandler)
	_, err := r.RunPodSandbox(ctx, podCfg("p"))
	assert.ErrorIs(t, err, boom)
	_, err = r.RunPodSandbox(ctx, podCfg("p"))
	assert.ErrorIs(t, err, sandbox.ErrUnknownHandler)
	sb, err := r.RunPodSandbox(ctx, podCfg("p"))
	require.NoError(t, err, "the queue is drained")

	r.FailNext("StartContainer", boom)
	id, err := r.CreateContainer(ctx, sb.ID, ctrCfg("c", "sleep", "inf"))
	require.NoError(t, err)
	assert.ErrorIs(t, r.StartContainer(ctx, id), boom)
	assert.Equal(t, sandbox.ContainerStateCreated, status(t, r, id).State, "a failed call changes nothing")
	require.NoError(t, r.StartContainer(ctx, id))

	calls := r.Calls()
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.Op)
		assert.Equal(t, epoch, c.Time)
	}
	assert.Equal(t, []string{"RunPodSandbox", "RunPodSandbox", "RunPodSandbox", "CreateContainer", "StartContainer", "ContainerStatus", "StartContainer"}, ops)
	assert.ErrorIs(t, calls[0].Err, boom)
	assert.Empty(t, calls[0].ID)
	assert.Equal(t, sb.ID, calls[2].ID)
	assert.Equal(t, id, calls[3].ID)
	assert.ErrorIs(t, calls[4].Err, boom)
	assert.NoError(t, calls[6].Err)

	assert.Panics(t, func() { r.FailNext("StartContaner", boom) }, "misspelt op")
	quiet := newRunner(t, fake.WithCallRecording(false))
	_, _, err = quiet.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, quiet.Calls())
}

func TestSandboxes(t *testing.T) {
	ctx := context.Background()
	r := newRunner(t, fake.WithPodCIDR(netip.MustParsePrefix("10.9.0.0/30")), fake.WithRuntimeHandlers("kata"))
	sb, err := r.RunPodSandbox(ctx, podCfg("a"))
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.9.0.2")}, sb.IPs)
	_, err = r.RunPodSandbox(ctx, podCfg("b"))
	assert.ErrorContains(t, err, "no free address", "a /30 holds one pod")
	require.NoError(t, r.StopPodSandbox(ctx, sb.ID))
	sbs, _, err := r.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, sbs[0].IPs, "a stopped sandbox's address is released")

	b := podCfg("b")
	b.RuntimeHandler = "kata"
	b.SharePID = true
	got, err := r.RunPodSandbox(ctx, b)
	require.NoError(t, err, "the released address is free again")
	assert.Equal(t, "kata", got.RuntimeHandler)
	assert.Positive(t, got.PausePID)

	c := podCfg("c")
	c.RuntimeHandler = "gvisor"
	_, err = r.RunPodSandbox(ctx, c)
	assert.ErrorIs(t, err, sandbox.ErrUnknownHandler)

	_, err = fake.New(fake.WithPodCIDR(netip.MustParsePrefix("10.9.0.0/31")))
	assert.Error(t, err)
}

func TestCRILogFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRunner(t, fake.WithClock(clocktesting.NewFakeClock(epoch)))
	cfg := podCfg("p")
	cfg.LogDirectory = dir
	sb, err := r.RunPodSandbox(ctx, cfg)
	require.NoError(t, err)
	ctr := ctrCfg("c", "print", "two\nlines")
	ctr.LogPath = "c/0.log"
	id, err := r.CreateContainer(ctx, sb.ID, ctr)
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	data, err := os.ReadFile(filepath.Join(dir, "c", "0.log"))
	require.NoError(t, err)
	ts := epoch.Format(time.RFC3339Nano)
	assert.Equal(t, ts+" stdout F two\n"+ts+" stdout F lines\n", string(data))
	assert.Equal(t, filepath.Join(dir, "c", "0.log"), status(t, r, id).LogPath)

	// An unwritable log directory loses the file, not the output.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	cfg = podCfg("q")
	cfg.LogDirectory = blocker
	sb, err = r.RunPodSandbox(ctx, cfg)
	require.NoError(t, err)
	ctr.LogPath = "c/0.log"
	id, err = r.CreateContainer(ctx, sb.ID, ctr)
	require.NoError(t, err)
	require.NoError(t, r.StartContainer(ctx, id))
	out, err := r.Output(id)
	require.NoError(t, err)
	assert.Len(t, out, 2)
}

func TestEventsVirtualTime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(epoch)
	r := newRunner(t, fake.WithClock(clk))
	events, err := r.Events(ctx)
	require.NoError(t, err)
	sbID, id := startPod(t, r, ctrCfg("c", "sleep", "2"))
	clk.Step(2 * time.Second)
	require.NoError(t, r.RemovePodSandbox(ctx, sbID))
	var got []string
	for range 4 {
		ev := <-events
		assert.Equal(t, id, ev.ContainerID)
		got = append(got, string(ev.Type)+"@"+ev.Time.Sub(epoch).String())
	}
	assert.Equal(t, "Created@0s Started@0s Stopped@2s Deleted@2s", strings.Join(got, " "))
}
