package sandboxtest

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

func testSandboxLifecycle(h *harness) {
	t := h.t
	cfg := h.podConfig("life")
	sb := h.runPod(cfg)
	assert.Equal(t, sandbox.SandboxReady, sb.State)
	assert.Equal(t, cfg.Pod, sb.Pod)
	assert.False(t, sb.CreatedAt.IsZero(), "CreatedAt")

	sbs, _ := h.list()
	require.Contains(t, sbs, sb.ID, "List shows the new sandbox")
	got := sbs[sb.ID]
	assert.Equal(t, sandbox.SandboxReady, got.State)
	assert.Equal(t, cfg.Pod, got.Pod)
	assert.True(t, got.CreatedAt.Equal(sb.CreatedAt), "CreatedAt %v in List, %v from Run", got.CreatedAt, sb.CreatedAt)
	assert.Equal(t, cfg.Labels, got.Labels)
	assert.Equal(t, cfg.Annotations, got.Annotations)

	for i := range 2 { // the second Stop finds it stopped
		require.NoError(t, h.r.StopPodSandbox(h.ctx, sb.ID), "stop %d", i+1)
		sbs, _ = h.list()
		require.Contains(t, sbs, sb.ID, "a stopped sandbox is still listed")
		assert.Equal(t, sandbox.SandboxNotReady, sbs[sb.ID].State)
	}
	for i := range 2 { // the second Remove finds nothing
		require.NoError(t, h.r.RemovePodSandbox(h.ctx, sb.ID), "remove %d", i+1)
		sbs, _ = h.list()
		assert.NotContains(t, sbs, sb.ID)
	}
	assert.ErrorIs(t, h.r.StopPodSandbox(h.ctx, sb.ID), sandbox.ErrNotFound, "stop after remove")

	// A Ready sandbox can be removed without a Stop first.
	sb2 := h.pod("life2")
	require.NoError(t, h.r.RemovePodSandbox(h.ctx, sb2.ID))
	sbs, _ = h.list()
	assert.NotContains(t, sbs, sb2.ID)
}

func testSandboxAlreadyExists(h *harness) {
	t := h.t
	cfg := h.podConfig("dup")
	first := h.runPod(cfg)
	assert.ErrorIs(t, h.tryPod(cfg), sandbox.ErrAlreadyExists, "same pod, same attempt")

	next := *cfg
	next.Pod.Attempt = 1
	h.runPod(&next) // a new attempt of the same pod is another sandbox

	require.NoError(t, h.r.StopPodSandbox(h.ctx, first.ID))
	assert.ErrorIs(t, h.tryPod(cfg), sandbox.ErrAlreadyExists, "a stopped sandbox still holds its pod and attempt")

	require.NoError(t, h.r.RemovePodSandbox(h.ctx, first.ID))
	again := h.runPod(cfg)
	assert.NotEqual(t, first.ID, again.ID, "IDs are not reused")
}

func testNotFound(h *harness) {
	t := h.t
	const missing = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sb := h.pod("nf")
	cases := []struct {
		name string
		call func() error
	}{
		{"StopPodSandbox", func() error { return h.r.StopPodSandbox(h.ctx, missing) }},
		{"CreateContainer", func() error {
			_, err := h.r.CreateContainer(h.ctx, missing, h.container("c", "sleep", "inf"))
			return err
		}},
		{"StartContainer", func() error { return h.r.StartContainer(h.ctx, missing) }},
		{"StopContainer", func() error { return h.r.StopContainer(h.ctx, missing, time.Second) }},
		{"ContainerStatus", func() error { _, err := h.r.ContainerStatus(h.ctx, missing); return err }},
		{"StartContainer with a sandbox ID", func() error { return h.r.StartContainer(h.ctx, sb.ID) }},
	}
	if ex, ok := h.r.(sandbox.Execer); ok {
		cases = append(cases, struct {
			name string
			call func() error
		}{"ExecSync", func() error { _, err := ex.ExecSync(h.ctx, missing, []string{Testbox, "exit", "0"}, 0); return err }})
	}
	for _, tc := range cases {
		assert.ErrorIs(t, tc.call(), sandbox.ErrNotFound, tc.name)
	}
	assert.NoError(t, h.r.RemovePodSandbox(h.ctx, missing), "removing an unknown sandbox succeeds")
	assert.NoError(t, h.r.RemoveContainer(h.ctx, missing), "removing an unknown container succeeds")
}

func testInvalid(h *harness) {
	t := h.t
	noName := h.podConfig("invalid")
	noName.Pod.Name = ""
	assert.ErrorIs(t, h.tryPod(noName), sandbox.ErrInvalid, "sandbox without a pod name")
	sbs, _ := h.list()
	assert.Empty(t, sbs, "a failed RunPodSandbox leaves nothing")

	sb := h.pod("invalid")
	c := h.container("", "sleep", "inf")
	_, err := h.r.CreateContainer(h.ctx, sb.ID, c)
	assert.ErrorIs(t, err, sandbox.ErrInvalid, "container without a name")

	c = h.container("nocmd")
	c.Command, c.Args = nil, nil
	_, err = h.r.CreateContainer(h.ctx, sb.ID, c)
	assert.ErrorIs(t, err, sandbox.ErrInvalid, "container without command, args, entrypoint or cmd")
	_, cs := h.list()
	assert.Empty(t, cs, "failed creations leave no container")
}

func testContainerLifecycle(h *harness) {
	t := h.t
	pcfg := h.podConfig("ctr")
	sb := h.runPod(pcfg)
	cfg := h.container("app", "sleep", "inf")
	cfg.Attempt = 2
	id := h.create(sb.ID, cfg)

	st := h.status(id)
	assert.Equal(t, sandbox.ContainerStateCreated, st.State)
	assert.Equal(t, sb.ID, st.SandboxID)
	assert.Equal(t, "app", st.Name)
	assert.Equal(t, uint32(2), st.Attempt)
	assert.Equal(t, cfg.Image, st.Image)
	assert.Equal(t, cfg.ImageID, st.ImageID)
	assert.Equal(t, filepath.Join(pcfg.LogDirectory, cfg.LogPath), st.LogPath)
	assert.Equal(t, cfg.Labels, st.Labels)
	assert.Equal(t, cfg.Annotations, st.Annotations)
	assert.False(t, st.CreatedAt.IsZero(), "CreatedAt")
	assert.True(t, st.StartedAt.IsZero(), "StartedAt before start")
	assert.True(t, st.FinishedAt.IsZero(), "FinishedAt before start")
	_, cs := h.list()
	require.Contains(t, cs, id)
	assert.Equal(t, sandbox.ContainerStateCreated, cs[id].State)

	h.start(id)
	st = h.status(id)
	assert.Equal(t, sandbox.ContainerStateRunning, st.State)
	assert.False(t, st.StartedAt.IsZero(), "StartedAt")
	assert.False(t, st.StartedAt.Before(st.CreatedAt), "started %v before created %v", st.StartedAt, st.CreatedAt)
	assert.True(t, st.FinishedAt.IsZero(), "FinishedAt while running")
	assert.Positive(t, st.PID, "PID while running")
	_, cs = h.list()
	require.Contains(t, cs, id)
	assert.Equal(t, sandbox.ContainerStateRunning, cs[id].State)

	require.NoError(t, h.r.StopContainer(h.ctx, id, 10*time.Second))
	st = h.status(id)
	assert.Equal(t, sandbox.ContainerStateExited, st.State, "exited once StopContainer returns")
	assert.False(t, st.FinishedAt.Before(st.StartedAt), "finished %v before started %v", st.FinishedAt, st.StartedAt)

	require.NoError(t, h.r.RemoveContainer(h.ctx, id))
	_, err := h.r.ContainerStatus(h.ctx, id)
	assert.ErrorIs(t, err, sandbox.ErrNotFound, "status after remove")
	_, cs = h.list()
	assert.NotContains(t, cs, id)
	require.NoError(t, h.r.RemoveContainer(h.ctx, id), "second remove")

	// A running container can be removed directly.
	id = h.run(sb.ID, h.container("direct", "sleep", "inf"))
	require.NoError(t, h.r.RemoveContainer(h.ctx, id))
	_, err = h.r.ContainerStatus(h.ctx, id)
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
}

func testContainerAlreadyExists(h *harness) {
	t := h.t
	sb := h.pod("cdup")
	first := h.create(sb.ID, h.container("app", "sleep", "inf"))
	_, err := h.r.CreateContainer(h.ctx, sb.ID, h.container("app", "sleep", "inf"))
	assert.ErrorIs(t, err, sandbox.ErrAlreadyExists, "same name, same attempt")

	next := h.container("app", "sleep", "inf")
	next.Attempt = 1
	h.create(sb.ID, next)

	// Another pod may use the name.
	other := h.pod("cdup-other")
	h.create(other.ID, h.container("app", "sleep", "inf"))

	require.NoError(t, h.r.RemoveContainer(h.ctx, first))
	again := h.create(sb.ID, h.container("app", "sleep", "inf"))
	assert.NotEqual(t, first, again, "IDs are not reused")
}

func testExitCodes(h *harness) {
	sb := h.pod("exit")
	cases := []struct {
		name   string
		args   []string
		code   int32
		reason string
	}{
		{"exit0", []string{"exit", "0"}, 0, sandbox.ReasonCompleted},
		{"exit3", []string{"exit", "3"}, 3, sandbox.ReasonError},
		{"exit255", []string{"exit", "255"}, 255, sandbox.ReasonError},
	}
	for _, tc := range cases {
		id := h.run(sb.ID, h.container(tc.name, tc.args...))
		st := h.waitExit(id)
		requireExit(h.t, st, tc.code, tc.reason)
		assert.False(h.t, st.StartedAt.IsZero(), "StartedAt of %s", tc.name)
		assert.False(h.t, st.FinishedAt.Before(st.StartedAt), "%s finished %v before it started %v", tc.name, st.FinishedAt, st.StartedAt)
	}
}

func testConcurrentPods(h *harness) {
	t := h.t
	const n = 4
	cfgs := make([]*sandbox.SandboxConfig, n)
	for i := range cfgs {
		cfgs[i] = h.podConfig("conc")
	}
	ctrs := make([]*sandbox.ContainerConfig, n)
	for i := range ctrs {
		ctrs[i] = h.container("app", "exit", "0")
	}
	type result struct {
		sb, c string
		err   error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sb, err := h.r.RunPodSandbox(h.ctx, cfgs[i])
			if err != nil {
				results[i].err = err
				return
			}
			results[i].sb = sb.ID
			results[i].c, results[i].err = h.r.CreateContainer(h.ctx, sb.ID, ctrs[i])
			if results[i].err == nil {
				results[i].err = h.r.StartContainer(h.ctx, results[i].c)
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, r := range results {
		if r.sb != "" {
			h.mu.Lock()
			h.pods[r.sb] = true
			h.mu.Unlock()
		}
		require.NoError(t, r.err, "pod %d", i)
		assert.False(t, seen[r.sb], "sandbox ID %s given twice", r.sb)
		seen[r.sb] = true
	}
	for _, r := range results {
		requireExit(t, h.waitExit(r.c), 0, sandbox.ReasonCompleted)
	}
	sbs, cs := h.list()
	for _, r := range results {
		assert.Contains(t, sbs, r.sb)
		assert.Contains(t, cs, r.c)
	}
}
