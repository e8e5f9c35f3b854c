package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

// t0 is when the test logs begin.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// criLine is one CRI log line written at t0+sec seconds.
func criLine(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

// writeFile writes a CRI log file and returns its path.
func writeFile(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o640))
	return path
}

// appendFile appends complete lines to a log file.
func appendFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(lines, ""))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// runningPod is pod web with container app running as podkit://<id>,
// whose previous instance podkit://<id>-prev exited with code 1.
func runningPod(ns, name, container, id string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, ContainerID: "podkit://" + id, RestartCount: 1,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", ContainerID: "podkit://" + id + "-prev"}},
		}}},
	}
}

// fakeRuntime is a SandboxRunner that only answers ContainerStatus.
type fakeRuntime struct {
	sandbox.SandboxRunner
	mu    sync.Mutex
	state map[string]*sandbox.ContainerStatus
	err   error
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{state: map[string]*sandbox.ContainerStatus{}}
}

// add registers container id with its log file, running or exited.
func (r *fakeRuntime) add(id, logPath string, running bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := sandbox.ContainerStateExited
	if running {
		st = sandbox.ContainerStateRunning
	}
	r.state[id] = &sandbox.ContainerStatus{ID: id, State: st, LogPath: logPath}
}

// exit marks container id exited.
func (r *fakeRuntime) exit(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state[id].State = sandbox.ContainerStateExited
}

func (r *fakeRuntime) ContainerStatus(_ context.Context, id string) (*sandbox.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	st, ok := r.state[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, sandbox.ErrNotFound)
	}
	c := *st
	return &c, nil
}

// statusLogs is a StatusLogs over pods and rt polling every 5ms.
func statusLogs(rt *fakeRuntime, pods ...*corev1.Pod) *StatusLogs {
	return &StatusLogs{Pod: lookup(pods...), Runtime: rt, Interval: 5 * time.Millisecond}
}

// lookup finds a pod among pods.
func lookup(pods ...*corev1.Pod) func(namespace, name string) (*corev1.Pod, bool) {
	return func(namespace, name string) (*corev1.Pod, bool) {
		for _, p := range pods {
			if p.Namespace == namespace && p.Name == name {
				return p, true
			}
		}
		return nil, false
	}
}

// newTestServer serves a Server over HTTP for the test.
func newTestServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	hs := httptest.NewServer(New(cfg))
	t.Cleanup(hs.Close)
	return hs
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func podsFunc(pods ...*corev1.Pod) func() []*corev1.Pod {
	return func() []*corev1.Pod { return pods }
}
