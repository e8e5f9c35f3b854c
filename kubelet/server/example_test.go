package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/kubelet/server"
)

// Example serves one pod's container log the way `kubectl logs --tail=1
// web` reaches it through the API server.
func Example() {
	dir, err := os.MkdirTemp("", "kubelet-server-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(dir, "default_web_0d5a", "app", "0.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(logPath, []byte(
		"2024-03-01T12:00:00Z stdout F listening on :8080\n"+
			"2024-03-01T12:00:01Z stderr F GET / 200\n"), 0o640); err != nil {
		panic(err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", ContainerID: "podkit://0d5a",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
	// A kubelet passes its own lookup (or a StatusLogs over its runtime);
	// this one always answers "running, logging to logPath".
	logs := server.PollLogFile(func(namespace, pod, container string, previous bool) (string, bool, error) {
		return logPath, true, nil
	}, 0, nil)
	srv := httptest.NewServer(server.New(server.Config{
		Pods: func() []*corev1.Pod { return []*corev1.Pod{pod} },
		Logs: logs,
	}))
	defer srv.Close()

	for _, path := range []string{"/containerLogs/default/web/app?tailLines=1", "/containerLogs/default/web/db"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s\n", resp.StatusCode, body)
	}
	// Output:
	// 200 GET / 200
	//
	// 404 container "db" not found in pod "web"
}
