package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestPods(t *testing.T) {
	web, db := runningPod("default", "web", "app", "c1"), runningPod("prod", "db", "pg", "c2")
	hs := newTestServer(t, Config{Pods: podsFunc(web, db)})
	code, body := get(t, hs.URL+"/pods")
	require.Equal(t, http.StatusOK, code)
	var list corev1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	assert.Equal(t, "PodList", list.Kind)
	assert.Equal(t, "v1", list.APIVersion)
	require.Len(t, list.Items, 2)
	assert.Equal(t, "web", list.Items[0].Name)
	assert.Equal(t, "podkit://c2", list.Items[1].Status.ContainerStatuses[0].ContainerID)

	empty := newTestServer(t, Config{})
	code, body = get(t, empty.URL+"/pods")
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`, body)

	code, _ = get(t, hs.URL+"/pods/web")
	assert.Equal(t, http.StatusNotFound, code)
}

func TestHealthz(t *testing.T) {
	var health error
	hs := newTestServer(t, Config{Healthz: func() error { return health }})
	code, body := get(t, hs.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	health = errors.New("PLEG is not healthy")
	code, body = get(t, hs.URL+"/healthz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "PLEG is not healthy")
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	running := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods", Help: "Number of pods running."})
	reg.MustRegister(running)
	running.Set(3)
	hs := newTestServer(t, Config{Gatherer: reg})
	code, body := get(t, hs.URL+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "kubelet_running_pods 3")

	code, _ = get(t, newTestServer(t, Config{}).URL+"/metrics")
	assert.Equal(t, http.StatusNotFound, code, "no gatherer, no metrics")
}

// TestServe serves on a real listener and stops when the context ends.
func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, New(Config{})) }()
	code, body := get(t, "http://"+l.Addr().String()+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + l.Addr().String() + "/healthz")
	assert.Error(t, err, "the listener is closed")
}

func TestListenAndServeBadAddress(t *testing.T) {
	err := ListenAndServe(t.Context(), "127.0.0.1:notaport", New(Config{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1:notaport")
}

// TestLogContainerID covers every branch of the kubelet's choice of
// container instance.
func TestLogContainerID(t *testing.T) {
	term := func(id string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: id}
	}
	for _, tc := range []struct {
		name     string
		st       corev1.ContainerStatus
		previous bool
		want     string
		err      string
	}{
		{name: "running", st: corev1.ContainerStatus{ContainerID: "podkit://b",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, want: "podkit://b"},
		{name: "previous", previous: true, st: corev1.ContainerStatus{ContainerID: "podkit://b",
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: term("podkit://a")}}, want: "podkit://a"},
		{name: "previous without one", previous: true, st: corev1.ContainerStatus{
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			err: `previous terminated container "app" in pod "web" not found`},
		{name: "previous without id", previous: true, st: corev1.ContainerStatus{
			LastTerminationState: corev1.ContainerState{Terminated: term("")}},
			err: `previous terminated container "app" in pod "web" not found`},
		{name: "terminated", st: corev1.ContainerStatus{
			State: corev1.ContainerState{Terminated: term("podkit://b")}}, want: "podkit://b"},
		{name: "terminated never started", st: corev1.ContainerStatus{
			State:                corev1.ContainerState{Terminated: term("")},
			LastTerminationState: corev1.ContainerState{Terminated: term("podkit://a")}}, want: "podkit://a"},
		{name: "terminated without any id", st: corev1.ContainerStatus{
			State: corev1.ContainerState{Terminated: term("")}}, err: `container "app" in pod "web" is terminated`},
		{name: "crash loop", st: corev1.ContainerStatus{
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: term("podkit://a")}}, want: "podkit://a"},
		{name: "last terminated without id", st: corev1.ContainerStatus{
			LastTerminationState: corev1.ContainerState{Terminated: term("")}}, err: `container "app" in pod "web" is terminated`},
		{name: "creating", st: corev1.ContainerStatus{
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
			err: `container "app" in pod "web" is waiting to start: ContainerCreating`},
		{name: "pod initializing", st: corev1.ContainerStatus{
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}},
			err: `container "app" in pod "web" is waiting to start: PodInitializing`},
		{name: "image pull", st: corev1.ContainerStatus{
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
			err: `container "app" in pod "web" is waiting to start: image can't be pulled`},
		{name: "no state", st: corev1.ContainerStatus{},
			err: `container "app" in pod "web" is waiting to start - no logs yet`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.st.Name = "app"
			pod := &corev1.Pod{}
			pod.Name = "web"
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{tc.st}
			got, err := LogContainerID(pod, "app", tc.previous)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	pod := &corev1.Pod{}
	pod.Name = "web"
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", ContainerID: "podkit://i",
		State: corev1.ContainerState{Terminated: term("podkit://i")}}}
	got, err := LogContainerID(pod, "init", false)
	require.NoError(t, err)
	assert.Equal(t, "podkit://i", got, "init containers have logs too")
	_, err = LogContainerID(pod, "app", false)
	assert.EqualError(t, err, `container "app" in pod "web" is not available`)
}
