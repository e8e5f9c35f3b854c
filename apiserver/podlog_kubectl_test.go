package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/kubelet/server"
)

// logT0 is when the test containers wrote their first line.
var logT0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// criLog renders CRI log lines, one second apart from logT0.
func criLog(lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		stream, text, _ := strings.Cut(l, ":")
		fmt.Fprintf(&b, "%s %s F %s\n", logT0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), stream, text)
	}
	return b.String()
}

// nodeLogs is the kubelet side of the test: real CRI files served by
// kubelet/server for pods whose status names their containers.
type nodeLogs struct {
	dir    string
	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	exited map[string]chan struct{}
}

// add records pod (as the kubelet's status manager knows it) and writes
// each running container's log, id "<pod>-<container>", and its previous
// instance's, id "<pod>-<container>-0".
func (n *nodeLogs) add(t *testing.T, pod *corev1.Pod, logs map[string]string) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods[pod.Name] = pod
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		id := pod.Name + "-" + c.Name
		require.NoError(t, os.WriteFile(filepath.Join(n.dir, id), []byte(logs[c.Name]), 0o640))
		require.NoError(t, os.WriteFile(filepath.Join(n.dir, id+"-0"), []byte(criLog("stdout:previous life of "+c.Name)), 0o640))
		n.exited[id] = make(chan struct{})
	}
}

// LogFile implements server.LogSource with the kubelet's choice of
// instance (server.LogContainerID).
func (n *nodeLogs) LogFile(_ context.Context, namespace, name, container string, previous bool) (string, <-chan struct{}, error) {
	pod, ok := n.pod(namespace, name)
	if !ok {
		return "", nil, server.PodNotFound(name)
	}
	cid, err := server.LogContainerID(pod, container, previous)
	if err != nil {
		return "", nil, err
	}
	id := strings.TrimPrefix(cid, "podkit://")
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.exited[id]
	if !ok {
		ch = make(chan struct{})
		close(ch) // a previous instance: exited
	}
	return filepath.Join(n.dir, id), ch, nil
}

func (n *nodeLogs) pod(namespace, name string) (*corev1.Pod, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.pods[name]
	return p, ok && namespace == "default"
}

// runningStatus is a running container with a previous failed instance.
func runningStatus(pod, container string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: container, ContainerID: "podkit://" + pod + "-" + container, RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, ContainerID: "podkit://" + pod + "-" + container + "-0"}}}
}

// TestKubectlLogs runs the real kubectl logs against the API server,
// which proxies to a real kubelet server reading CRI log files.
func TestKubectlLogs(t *testing.T) {
	bin := testutil.Kubectl(t, 32)
	n := &nodeLogs{dir: t.TempDir(), pods: map[string]*corev1.Pod{}, exited: map[string]chan struct{}{}}
	kubelet := httptest.NewServer(server.New(server.Config{
		Pod: n.pod, Logs: n, PollInterval: 5 * time.Millisecond,
		Clock:  clocktesting.NewFakePassiveClock(logT0.Add(1500 * time.Millisecond)),
		Logger: slog.New(slog.DiscardHandler),
	}))
	t.Cleanup(kubelet.Close)
	ts := newTestServer(t)
	addNode(t, ts.client, "node-1", kubelet.Listener.Addr().String())

	create := func(name string, containers []string, statuses ...corev1.ContainerStatus) *corev1.Pod {
		addPod(t, ts.client, name, "node-1", containers...)
		pod, err := ts.client.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		pod.Status.ContainerStatuses = statuses
		return pod
	}
	web := create("web", []string{"app"}, runningStatus("web", "app"))
	n.add(t, web, map[string]string{"app": criLog("stdout:hello", "stderr:world")})
	multi := create("multi", []string{"a", "b"}, runningStatus("multi", "a"), runningStatus("multi", "b"))
	multi.Status.InitContainerStatuses = []corev1.ContainerStatus{runningStatus("multi", "setup")}
	n.add(t, multi, map[string]string{"a": criLog("stdout:from a"), "b": criLog("stdout:from b"), "setup": criLog("stdout:setting up")})
	waiting := create("waiting", []string{"app"}, corev1.ContainerStatus{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	n.add(t, waiting, nil)

	kubectl := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"--server=" + ts.http.URL}, args...)...)
		home := t.TempDir()
		cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"), "NO_PROXY=127.0.0.1"}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"all", []string{"logs", "web"}, "hello\nworld\n"},
		{"tail", []string{"logs", "web", "--tail=1"}, "world\n"},
		{"timestamps", []string{"logs", "web", "--tail=1", "--timestamps"}, "2024-03-01T12:00:01.000000000Z world\n"},
		{"since", []string{"logs", "web", "--since=1s"}, "world\n"},
		{"limit bytes", []string{"logs", "web", "--limit-bytes=3"}, "hel"},
		{"previous", []string{"logs", "web", "--previous"}, "previous life of app\n"},
		{"container", []string{"logs", "multi", "-c", "b"}, "from b\n"},
		{"init container", []string{"logs", "pod/multi", "-c", "setup"}, "setting up\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := kubectl(tc.args...)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			assert.Equal(t, tc.want, out)
		})
	}

	t.Run("default container", func(t *testing.T) {
		out, errOut, code := kubectl("logs", "multi")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, "from a\n", out)
		assert.Contains(t, errOut, `Defaulted container "a" out of: a, b, setup (init)`)
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"waiting", []string{"logs", "waiting"}, `Error from server (BadRequest): container "app" in pod "waiting" is waiting to start: ContainerCreating`},
		// kubectl checks these itself, from the pod it read first.
		{"unknown container", []string{"logs", "web", "-c", "nope"}, "error: container nope is not valid for pod web"},
		{"unknown pod", []string{"logs", "ghost"}, `error: error from server (NotFound): pods "ghost" not found in namespace "default"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := kubectl(tc.args...)
			assert.Equal(t, 1, code)
			assert.Equal(t, tc.want, strings.TrimSpace(errOut))
		})
	}

	t.Run("follow", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), bin, "--server="+ts.http.URL, "logs", "-f", "web")
		home := t.TempDir()
		cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"), "NO_PROXY=127.0.0.1"}
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		errb := &lockedBuffer{}
		cmd.Stderr = errb
		require.NoError(t, cmd.Start())
		rd := bufio.NewReader(stdout)
		for _, want := range []string{"hello\n", "world\n"} {
			line, err := rd.ReadString('\n')
			require.NoError(t, err, errb.String())
			assert.Equal(t, want, line)
		}
		f, err := os.OpenFile(filepath.Join(n.dir, "web-app"), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = fmt.Fprintf(f, "%s stdout F live\n", logT0.Add(time.Minute).Format(time.RFC3339Nano))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "live\n", line)

		close(n.exited["web-app"]) // the container exits: kubectl logs -f ends
		rest, err := io.ReadAll(rd)
		require.NoError(t, err)
		assert.Empty(t, string(rest))
		require.NoError(t, cmd.Wait(), errb.String())
	})
}

// lockedBuffer is a bytes.Buffer a running command may write while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
