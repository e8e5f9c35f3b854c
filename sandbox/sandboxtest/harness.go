package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

// harness is one subtest's runner and the sandboxes it made.
type harness struct {
	t   *testing.T
	env Env
	ctx context.Context
	r   sandbox.SandboxRunner

	mu sync.Mutex
	// pods are the sandboxes to remove at the end.
	pods map[string]bool
}

func newHarness(t *testing.T, env Env) *harness {
	h := &harness{t: t, env: env, ctx: t.Context(), pods: map[string]bool{}}
	h.r = env.NewRunner(t)
	require.NotNil(t, h.r, "Env.NewRunner returned nil")
	// Registered after NewRunner's cleanups, so it runs before them.
	t.Cleanup(h.removePods)
	return h
}

// removePods removes what the test left, with the newest runner.
func (h *harness) removePods() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.pods {
		// t.Context is done by now.
		assert.NoError(h.t, h.r.RemovePodSandbox(context.Background(), id), "cleanup: remove sandbox %s", id)
		delete(h.pods, id)
	}
}

// reopen swaps the runner for a second one over the same state.
func (h *harness) reopen() {
	h.t.Helper()
	require.NotNil(h.t, h.env.Reopen, "Features.Restart needs Env.Reopen")
	r := h.env.Reopen(h.t, h.r)
	require.NotNil(h.t, r, "Env.Reopen returned nil")
	h.mu.Lock()
	h.r = r
	h.mu.Unlock()
	// Again after Reopen's cleanups, so the new runner removes the pods
	// before it is closed.
	h.t.Cleanup(h.removePods)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// podConfig describes a fresh pod named name (plus a random suffix).
func (h *harness) podConfig(name string) *sandbox.SandboxConfig {
	h.t.Helper()
	name = name + "-" + randomHex(3)
	cfg := &sandbox.SandboxConfig{
		Pod:         sandbox.PodMeta{Name: name, Namespace: "sandboxtest", UID: randomHex(16)},
		Hostname:    name,
		Labels:      map[string]string{"sandboxtest": "yes"},
		Annotations: map[string]string{"sandboxtest/pod": name},
	}
	if h.env.LogDir != nil {
		cfg.LogDirectory = h.env.LogDir(h.t)
	} else {
		cfg.LogDirectory = h.t.TempDir()
	}
	if h.env.CgroupParent != nil {
		cfg.CgroupParent = h.env.CgroupParent(h.t)
	}
	return cfg
}

// runPod runs a sandbox and removes it at the end of the test.
func (h *harness) runPod(cfg *sandbox.SandboxConfig) *sandbox.Sandbox {
	h.t.Helper()
	sb, err := h.r.RunPodSandbox(h.ctx, cfg)
	require.NoError(h.t, err, "run sandbox for pod %s", cfg.Pod.Name)
	require.NotEmpty(h.t, sb.ID)
	h.mu.Lock()
	h.pods[sb.ID] = true
	h.mu.Unlock()
	return sb
}

// tryPod runs a sandbox the test expects to fail; should it succeed, it is
// still removed at the end.
func (h *harness) tryPod(cfg *sandbox.SandboxConfig) error {
	h.t.Helper()
	sb, err := h.r.RunPodSandbox(h.ctx, cfg)
	if err == nil {
		h.mu.Lock()
		h.pods[sb.ID] = true
		h.mu.Unlock()
	}
	return err
}

// pod runs a fresh pod named name.
func (h *harness) pod(name string) *sandbox.Sandbox {
	h.t.Helper()
	return h.runPod(h.podConfig(name))
}

// container describes a container running `testbox args...`, logging to
// <name>/0.log.
func (h *harness) container(name string, args ...string) *sandbox.ContainerConfig {
	h.t.Helper()
	cfg := &sandbox.ContainerConfig{
		Name:        name,
		Image:       "podkit.test/testbox:latest",
		ImageID:     "sha256:" + strings.Repeat("ab", 32),
		Command:     []string{Testbox},
		Args:        args,
		LogPath:     name + "/0.log",
		Labels:      map[string]string{"sandboxtest": "yes"},
		Annotations: map[string]string{"sandboxtest/container": name},
	}
	if h.env.Rootfs != nil {
		cfg.Rootfs = h.env.Rootfs(h.t)
	}
	return cfg
}

func (h *harness) create(sandboxID string, cfg *sandbox.ContainerConfig) string {
	h.t.Helper()
	id, err := h.r.CreateContainer(h.ctx, sandboxID, cfg)
	require.NoError(h.t, err, "create container %s", cfg.Name)
	require.NotEmpty(h.t, id)
	return id
}

func (h *harness) start(id string) {
	h.t.Helper()
	require.NoError(h.t, h.r.StartContainer(h.ctx, id), "start container %s", id)
}

// run creates and starts a container.
func (h *harness) run(sandboxID string, cfg *sandbox.ContainerConfig) string {
	h.t.Helper()
	id := h.create(sandboxID, cfg)
	h.start(id)
	return id
}

func (h *harness) status(id string) *sandbox.ContainerStatus {
	h.t.Helper()
	st, err := h.r.ContainerStatus(h.ctx, id)
	require.NoError(h.t, err, "status of container %s", id)
	require.Equal(h.t, id, st.ID)
	return st
}

// eventually polls cond every tick until it holds, failing the test when
// the timeout passes. Unlike require.Eventually it calls cond on the test's
// goroutine, so cond may use require.
func (h *harness) eventually(what string, tick time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(h.env.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("gave up after %s waiting for %s", h.env.Timeout, what)
		}
		select {
		case <-time.After(tick):
		case <-h.ctx.Done():
			h.t.Fatalf("test ended waiting for %s", what)
		}
	}
}

// waitExit waits for a container to exit and returns its status.
func (h *harness) waitExit(id string) *sandbox.ContainerStatus {
	h.t.Helper()
	var st *sandbox.ContainerStatus
	h.eventually("container "+id+" to exit", 10*time.Millisecond, func() bool {
		st = h.status(id)
		return st.State == sandbox.ContainerStateExited
	})
	return st
}

// requireExit checks an exited container's code and reason.
func requireExit(t *testing.T, st *sandbox.ContainerStatus, code int32, reason string) {
	t.Helper()
	require.Equal(t, sandbox.ContainerStateExited, st.State, "container %s (%s)", st.Name, st.ID)
	assert.Equal(t, code, st.ExitCode, "exit code of %s", st.Name)
	assert.Equal(t, reason, st.Reason, "reason of %s (message %q)", st.Name, st.Message)
	assert.False(t, st.FinishedAt.IsZero(), "FinishedAt of %s", st.Name)
}

// criLine is one line of a CRI log file.
type criLine struct {
	Time   time.Time
	Stream string
	Full   bool
	Text   string
}

// readLog parses a CRI log file, joining partial lines; a missing file is
// an empty log.
func readLog(path string) ([]criLine, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []criLine
	var partial strings.Builder
	for raw := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		if raw == "" {
			continue
		}
		f := strings.SplitN(raw, " ", 4)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s: malformed CRI log line %q", path, raw)
		}
		ts, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", path, raw, err)
		}
		if f[1] != "stdout" && f[1] != "stderr" {
			return nil, fmt.Errorf("%s: line %q: stream %q", path, raw, f[1])
		}
		text := ""
		if len(f) == 4 {
			text = f[3]
		}
		switch f[2] {
		case "P":
			partial.WriteString(text)
		case "F":
			partial.WriteString(text)
			out = append(out, criLine{Time: ts, Stream: f[1], Full: true, Text: partial.String()})
			partial.Reset()
		default:
			return nil, fmt.Errorf("%s: line %q: tag %q", path, raw, f[2])
		}
	}
	return out, nil
}

// stdout returns the lines a container wrote to stdout, from its log.
func (h *harness) stdout(id string) []string {
	h.t.Helper()
	st := h.status(id)
	require.NotEmpty(h.t, st.LogPath, "container %s has no log", st.Name)
	lines, err := readLog(st.LogPath)
	require.NoError(h.t, err)
	var out []string
	for _, l := range lines {
		if l.Stream == "stdout" {
			out = append(out, l.Text)
		}
	}
	return out
}

// waitOutput waits until a container has printed a line starting with
// prefix, when the runner keeps logs (so a test can tell that testbox set
// up its signal handling before it stops it); without logs it returns at
// once.
func (h *harness) waitOutput(id, prefix string) {
	h.t.Helper()
	if !h.env.Features.Logs {
		return
	}
	h.eventually(fmt.Sprintf("container %s to print %q", id, prefix), 10*time.Millisecond, func() bool {
		for _, l := range h.stdout(id) {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	})
}

// output runs a container to its end and returns its status and stdout.
func (h *harness) output(sandboxID string, cfg *sandbox.ContainerConfig) (*sandbox.ContainerStatus, []string) {
	h.t.Helper()
	id := h.run(sandboxID, cfg)
	st := h.waitExit(id)
	return st, h.stdout(id)
}

// outputOK is output for a container that must exit 0.
func (h *harness) outputOK(sandboxID string, cfg *sandbox.ContainerConfig) []string {
	h.t.Helper()
	st, out := h.output(sandboxID, cfg)
	require.Equal(h.t, int32(0), st.ExitCode, "container %s %q failed (reason %s), stdout %q", cfg.Name, cfg.Args, st.Reason, out)
	return out
}

// list returns the runner's sandboxes and containers by ID.
func (h *harness) list() (map[string]*sandbox.Sandbox, map[string]*sandbox.ContainerStatus) {
	h.t.Helper()
	sbs, cs, err := h.r.List(h.ctx)
	require.NoError(h.t, err)
	sm := map[string]*sandbox.Sandbox{}
	for _, s := range sbs {
		sm[s.ID] = s
	}
	cm := map[string]*sandbox.ContainerStatus{}
	for _, c := range cs {
		cm[c.ID] = c
	}
	return sm, cm
}
