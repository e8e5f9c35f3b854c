package sandboxtest

import (
	"context"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

func testLogs(h *harness) {
	t := h.t
	sb := h.pod("logs")
	out := h.run(sb.ID, h.container("out", "print", "hello"))
	errc := h.run(sb.ID, h.container("err", "eprint", "oops"))
	for _, tc := range []struct{ id, stream, text string }{{out, "stdout", "hello"}, {errc, "stderr", "oops"}} {
		st := h.waitExit(tc.id)
		requireExit(t, st, 0, sandbox.ReasonCompleted)
		lines, err := readLog(st.LogPath)
		require.NoError(t, err, "log of %s", st.Name)
		require.Len(t, lines, 1, "log of %s: %+v", st.Name, lines)
		assert.Equal(t, tc.stream, lines[0].Stream)
		assert.True(t, lines[0].Full, "a whole line is tagged F")
		assert.Equal(t, tc.text, lines[0].Text)
	}

	// Without a LogPath the output goes nowhere, and nothing breaks.
	quiet := h.container("quiet", "print", "nobody reads this")
	quiet.LogPath = ""
	id := h.run(sb.ID, quiet)
	st := h.waitExit(id)
	requireExit(t, st, 0, sandbox.ReasonCompleted)
	assert.Empty(t, st.LogPath)
}

func testExec(h *harness) {
	t := h.t
	ex, ok := h.r.(sandbox.Execer)
	require.True(t, ok, "Features.Exec, but %T is not a sandbox.Execer", h.r)
	sb := h.pod("exec")
	id := h.run(sb.ID, h.container("app", "sleep", "inf"))

	res, err := ex.ExecSync(h.ctx, id, []string{Testbox, "print", "hi"}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(res.Stdout))
	assert.Empty(t, res.Stderr)
	assert.Equal(t, int32(0), res.ExitCode)

	res, err = ex.ExecSync(h.ctx, id, []string{Testbox, "exit", "4"}, 10*time.Second)
	require.NoError(t, err, "a command that runs and fails is no error")
	assert.Equal(t, int32(4), res.ExitCode)

	res, err = ex.ExecSync(h.ctx, id, []string{Testbox, "eprint", "to", "stderr"}, 0)
	require.NoError(t, err)
	assert.Equal(t, "to stderr\n", string(res.Stderr))
	assert.Empty(t, res.Stdout)
	assert.Equal(t, sandbox.ContainerStateRunning, h.status(id).State, "exec leaves the container running")

	done := h.run(sb.ID, h.container("done", "exit", "0"))
	h.waitExit(done)
	_, err = ex.ExecSync(h.ctx, done, []string{Testbox, "print", "hi"}, 10*time.Second)
	assert.Error(t, err, "exec in an exited container")
}

func testEvents(h *harness) {
	t := h.t
	src, ok := h.r.(sandbox.EventSource)
	require.True(t, ok, "Features.Events, but %T is not a sandbox.EventSource", h.r)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	events, err := src.Events(ctx)
	require.NoError(t, err)

	sb := h.pod("events")
	id := h.run(sb.ID, h.container("app", "exit", "0"))
	h.waitExit(id)
	require.NoError(t, h.r.RemoveContainer(h.ctx, id))

	want := []sandbox.ContainerEventType{sandbox.ContainerCreated, sandbox.ContainerStarted, sandbox.ContainerStopped, sandbox.ContainerDeleted}
	var got []sandbox.ContainerEventType
	timeout := time.After(h.env.Timeout)
	for len(got) < len(want) {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "events closed early; got %v", got)
			if ev.ContainerID != id {
				continue
			}
			assert.Equal(t, sb.ID, ev.SandboxID, "event %s", ev.Type)
			assert.False(t, ev.Time.IsZero(), "time of event %s", ev.Type)
			got = append(got, ev.Type)
		case <-timeout:
			t.Fatalf("gave up waiting for events %v, got %v", want, got)
		}
	}
	assert.Equal(t, want, got)

	cancel()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-time.After(h.env.Timeout):
			t.Fatal("the events channel is not closed after its context ended")
		}
	}
}

func testOOM(h *harness) {
	t := h.t
	sb := h.pod("oom")
	cfg := h.container("hog", "alloc", "64")
	limit := int64(16 << 20)
	cfg.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}
	id := h.run(sb.ID, cfg)
	requireExit(t, h.waitExit(id), 137, sandbox.ReasonOOMKilled)
}

func testNetwork(h *harness) {
	t := h.t
	a, b := h.pod("net-a"), h.pod("net-b")
	require.NotEmpty(t, a.IPs, "pod a has an address")
	require.NotEmpty(t, b.IPs, "pod b has an address")
	for _, ip := range a.IPs {
		assert.True(t, ip.IsValid(), "address %v", ip)
		assert.NotContains(t, b.IPs, ip, "pods share address %s", ip)
	}
	sbs, _ := h.list()
	assert.Equal(t, a.IPs, sbs[a.ID].IPs, "List reports the addresses")
	assert.Equal(t, b.IPs, sbs[b.ID].IPs, "List reports the addresses")

	host := h.podConfig("net-host")
	host.HostNetwork = true
	assert.Empty(t, h.runPod(host).IPs, "a host-network pod has no address of its own")
}

func testRestart(h *harness) {
	t := h.t
	sb := h.pod("restart")
	short := h.run(sb.ID, h.container("short", "sleep", "2"))
	long := h.run(sb.ID, h.container("long", "term-exit", "7"))
	h.waitOutput(long, "waiting for SIGTERM")

	h.reopen()
	sbs, cs := h.list()
	require.Contains(t, sbs, sb.ID, "the reopened runner lists the sandbox")
	assert.Equal(t, sandbox.SandboxReady, sbs[sb.ID].State)
	require.Contains(t, cs, long, "the reopened runner lists the running container")
	assert.Equal(t, sandbox.ContainerStateRunning, cs[long].State)
	assert.Positive(t, cs[long].PID)
	require.Contains(t, cs, short)

	// It learns of an exit on its own, and of one it causes.
	requireExit(t, h.waitExit(short), 0, sandbox.ReasonCompleted)
	require.NoError(t, h.r.StopContainer(h.ctx, long, longGrace))
	requireExit(t, h.status(long), 7, sandbox.ReasonError)

	require.NoError(t, h.r.RemovePodSandbox(h.ctx, sb.ID))
	sbs, cs = h.list()
	assert.Empty(t, sbs)
	assert.Empty(t, cs)
}
