package sandboxtest

import (
	"strconv"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

// longGrace is a grace period no correct stop waits out: a container that
// handles SIGTERM exits long before, and one killed at the end of it
// reports 137, which the tests reject.
const longGrace = 30 * time.Second

func testStopHandledSignal(h *harness) {
	sb := h.pod("term")
	for _, code := range []int32{0, 5} {
		id := h.run(sb.ID, h.container("term"+strconv.Itoa(int(code)), "term-exit", strconv.Itoa(int(code))))
		h.waitOutput(id, "waiting for SIGTERM")
		require.NoError(h.t, h.r.StopContainer(h.ctx, id, longGrace))
		reason := sandbox.ReasonCompleted
		if code != 0 {
			reason = sandbox.ReasonError
		}
		// Killed after the grace period it would be 137.
		requireExit(h.t, h.status(id), code, reason)
	}
}

func testStopIgnoredSignal(h *harness) {
	t := h.t
	sb := h.pod("ignore")
	id := h.run(sb.ID, h.container("stubborn", "ignore-term"))
	h.waitOutput(id, "ignoring SIGTERM")
	require.NoError(t, h.r.StopContainer(h.ctx, id, 500*time.Millisecond))
	requireExit(t, h.status(id), 137, sandbox.ReasonError)
}

func testStopExited(h *harness) {
	t := h.t
	sb := h.pod("stopexited")
	id := h.run(sb.ID, h.container("done", "exit", "3"))
	before := h.waitExit(id)
	for i := range 2 {
		require.NoError(t, h.r.StopContainer(h.ctx, id, time.Second), "stop %d of an exited container", i+1)
	}
	after := h.status(id)
	requireExit(t, after, 3, sandbox.ReasonError)
	assert.True(t, after.FinishedAt.Equal(before.FinishedAt), "FinishedAt changed from %v to %v", before.FinishedAt, after.FinishedAt)
}

func testStartNotCreated(h *harness) {
	t := h.t
	sb := h.pod("restart")
	id := h.run(sb.ID, h.container("running", "sleep", "inf"))
	assert.ErrorIs(t, h.r.StartContainer(h.ctx, id), sandbox.ErrNotReady, "starting a running container")
	assert.Equal(t, sandbox.ContainerStateRunning, h.status(id).State, "still running")

	done := h.run(sb.ID, h.container("exited", "exit", "0"))
	h.waitExit(done)
	assert.ErrorIs(t, h.r.StartContainer(h.ctx, done), sandbox.ErrNotReady, "starting an exited container")
	requireExit(t, h.status(done), 0, sandbox.ReasonCompleted)
}

func testCreateInStoppedSandbox(h *harness) {
	t := h.t
	sb := h.pod("stopped")
	require.NoError(t, h.r.StopPodSandbox(h.ctx, sb.ID))
	_, err := h.r.CreateContainer(h.ctx, sb.ID, h.container("late", "sleep", "inf"))
	assert.ErrorIs(t, err, sandbox.ErrNotReady)
	_, cs := h.list()
	assert.Empty(t, cs)
}

func testStopSandboxKills(h *harness) {
	t := h.t
	sb := h.pod("kill")
	ids := []string{
		h.run(sb.ID, h.container("sleeper", "sleep", "inf")),
		h.run(sb.ID, h.container("stubborn", "ignore-term")),
	}
	h.waitOutput(ids[1], "ignoring SIGTERM")
	done := h.run(sb.ID, h.container("done", "exit", "4"))
	doneBefore := h.waitExit(done)

	require.NoError(t, h.r.StopPodSandbox(h.ctx, sb.ID))
	for _, id := range ids {
		// Killed without a grace period: SIGKILL.
		requireExit(t, h.waitExit(id), 137, sandbox.ReasonError)
	}
	after := h.status(done)
	requireExit(t, after, 4, sandbox.ReasonError)
	assert.True(t, after.FinishedAt.Equal(doneBefore.FinishedAt), "an exited container is left as it was")
	sbs, _ := h.list()
	assert.Equal(t, sandbox.SandboxNotReady, sbs[sb.ID].State)
}

func testRemoveSandboxRemoves(h *harness) {
	t := h.t
	sb := h.pod("rm")
	keep := h.pod("rm-keep")
	ids := []string{
		h.run(sb.ID, h.container("running", "sleep", "inf")),
		h.create(sb.ID, h.container("created", "sleep", "inf")),
	}
	done := h.run(sb.ID, h.container("done", "exit", "0"))
	h.waitExit(done)
	ids = append(ids, done)
	other := h.run(keep.ID, h.container("other", "sleep", "inf"))

	require.NoError(t, h.r.RemovePodSandbox(h.ctx, sb.ID))
	for _, id := range ids {
		_, err := h.r.ContainerStatus(h.ctx, id)
		assert.ErrorIs(t, err, sandbox.ErrNotFound, "container %s of a removed sandbox", id)
	}
	sbs, cs := h.list()
	assert.NotContains(t, sbs, sb.ID)
	assert.Equal(t, []string{other}, keys(cs), "only the other pod's container remains")
	assert.Equal(t, sandbox.ContainerStateRunning, h.status(other).State, "the other pod is untouched")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
