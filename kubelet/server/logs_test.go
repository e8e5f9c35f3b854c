package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestContainerLogs reads a real CRI log file through the server with
// every option the kubelet supports.
func TestContainerLogs(t *testing.T) {
	dir := t.TempDir()
	cur := writeFile(t, dir, "default_web_uid/app/1.log",
		criLine(0, "stdout", "F", "one"),
		criLine(10, "stderr", "F", "warn two"),
		criLine(20, "stdout", "P", "thr"),
		criLine(21, "stdout", "F", "ee"),
		criLine(30, "stdout", "F", "four"),
	)
	prev := writeFile(t, dir, "default_web_uid/app/0.log", criLine(0, "stdout", "F", "crashed"))
	rt := newFakeRuntime()
	rt.add("c1", cur, true)
	rt.add("c1-prev", prev, false)
	web := runningPod("default", "web", "app", "c1")
	clk := clocktesting.NewFakePassiveClock(t0.Add(35 * time.Second))
	hs := newTestServer(t, Config{Pods: podsFunc(web), Logs: statusLogs(rt, web), Clock: clk})

	for _, tc := range []struct {
		name, query, want string
	}{
		{"all", "", "one\nwarn two\nthree\nfour\n"},
		{"tail", "tailLines=2", "three\nfour\n"},
		{"legacy tail", "tail=1", "four\n"},
		{"legacy tail all", "tail=all", "one\nwarn two\nthree\nfour\n"},
		{"tail zero", "tailLines=0", ""},
		{"timestamps", "tailLines=2&timestamps=true",
			"2024-03-01T12:00:20.000000000Z three\n2024-03-01T12:00:30.000000000Z four\n"},
		{"since seconds", "sinceSeconds=16", "three\nfour\n"},
		{"since time", "sinceTime=2024-03-01T12:00:10Z", "warn two\nthree\nfour\n"},
		{"limit bytes", "limitBytes=6", "one\nwa"},
		{"previous", "previous=true", "crashed\n"},
		{"stderr only", "stream=Stderr", "warn two\n"},
		{"stdout only", "stream=Stdout&tailLines=1", "four\n"},
		{"stderr tail counts stderr lines", "stream=Stderr&tailLines=1", "warn two\n"},
		{"follow of an exited instance ends", "previous=1&follow=true", "crashed\n"},
		{"false flags", "follow=false&timestamps=0&previous=false", "one\nwarn two\nthree\nfour\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, hs.URL+"/containerLogs/default/web/app?"+tc.query)
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, tc.want, body)
		})
	}
}

// TestContainerLogsErrors: each failure has Kubernetes' status and text.
func TestContainerLogsErrors(t *testing.T) {
	dir := t.TempDir()
	cur := writeFile(t, dir, "1.log", criLine(0, "stdout", "F", "x"))
	rt := newFakeRuntime()
	rt.add("c1", cur, true)
	rt.add("gone", dir+"/missing.log", false)

	running := runningPod("default", "web", "app", "c1")
	fresh := runningPod("default", "fresh", "app", "c2")
	fresh.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	fresh.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	pulling := runningPod("default", "pulling", "app", "c3")
	pulling.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	pulling.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	unknown := runningPod("default", "unknown", "app", "nope")
	deleted := runningPod("default", "deleted", "app", "gone")
	pods := []*corev1.Pod{running, fresh, pulling, unknown, deleted}

	hs := newTestServer(t, Config{Pods: podsFunc(pods...), Logs: statusLogs(rt, pods...)})
	for _, tc := range []struct {
		name, path string
		code       int
		want       string
	}{
		{"unknown pod", "/containerLogs/default/nope/app", 404, `pod "nope" does not exist`},
		{"pod in another namespace", "/containerLogs/other/web/app", 404, `pod "web" does not exist`},
		{"unknown container", "/containerLogs/default/web/sidecar", 404, `container "sidecar" not found in pod "web"`},
		{"waiting", "/containerLogs/default/fresh/app", 400, `container "app" in pod "fresh" is waiting to start: ContainerCreating`},
		{"image pull backoff", "/containerLogs/default/pulling/app", 400, `container "app" in pod "pulling" is waiting to start: trying and failing to pull image`},
		{"no previous", "/containerLogs/default/fresh/app?previous=true", 400, `previous terminated container "app" in pod "fresh" not found`},
		{"negative tail", "/containerLogs/default/web/app?tailLines=-1", 422, `{"message": "Invalid request."}`},
		{"zero limit", "/containerLogs/default/web/app?limitBytes=0", 422, `{"message": "Invalid request."}`},
		{"both since", "/containerLogs/default/web/app?sinceSeconds=1&sinceTime=2024-03-01T12:00:10Z", 422, `{"message": "Invalid request."}`},
		{"bad stream", "/containerLogs/default/web/app?stream=both", 422, `{"message": "Invalid request."}`},
		{"undecodable", "/containerLogs/default/web/app?tailLines=ten", 400, `{"message": "Unable to decode query."}`},
		{"bad time", "/containerLogs/default/web/app?sinceTime=yesterday", 400, `{"message": "Unable to decode query."}`},
		{"missing pod", "/containerLogs/default//app", 400, `{"message": "Missing podID."}`},
		{"missing container", "/containerLogs/default/web/", 400, `{"message": "Missing container name."}`},
		{"missing namespace", "/containerLogs//web/app", 400, `{"message": "Missing podNamespace."}`},
		{"short path", "/containerLogs/default/web", 404, "404 page not found\n"},
		{"log source error", "/containerLogs/default/unknown/app", 400, `container "app" in pod "unknown": container nope no longer exists on this node`},
		{"missing file", "/containerLogs/default/deleted/app", 400, `failed to open log file "` + dir + `/missing.log"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, hs.URL+tc.path)
			assert.Equal(t, tc.code, code)
			assert.True(t, strings.HasPrefix(body, tc.want), "body %q, want prefix %q", body, tc.want)
		})
	}

	resp, err := http.Post(hs.URL+"/containerLogs/default/web/app", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET", resp.Header.Get("Allow"))
}

// TestContainerLogsSourceOnly: without a pod lookup the server relies on
// the LogSource's not-found errors.
func TestContainerLogsSourceOnly(t *testing.T) {
	web := runningPod("default", "web", "app", "c1")
	hs := newTestServer(t, Config{Logs: statusLogs(newFakeRuntime(), web)})
	code, body := get(t, hs.URL+"/containerLogs/default/nope/app")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, `pod "nope" does not exist`, body)
	code, body = get(t, hs.URL+"/containerLogs/default/web/db")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, `container "db" not found in pod "web"`, body)
}

// TestContainerLogsNoSource: a server without a LogSource finds no logs.
func TestContainerLogsNoSource(t *testing.T) {
	hs := newTestServer(t, Config{Pods: podsFunc(runningPod("default", "web", "app", "c1"))})
	code, body := get(t, hs.URL+"/containerLogs/default/web/app")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "no log source")
}

// TestContainerLogsFollow: a follower sees the backlog, then new lines as
// they are written, and the response ends when the container exits.
func TestContainerLogsFollow(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "1.log", criLine(0, "stdout", "F", "first"))
	rt := newFakeRuntime()
	rt.add("c1", path, true)
	web := runningPod("default", "web", "app", "c1")
	hs := newTestServer(t, Config{Pods: podsFunc(web), Logs: statusLogs(rt, web)})

	resp, err := http.Get(hs.URL + "/containerLogs/default/web/app?follow=true&timestamps=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "2024-03-01T12:00:00.000000000Z first\n", line)

	appendFile(t, path, criLine(1, "stderr", "F", "second"))
	line, err = rd.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "2024-03-01T12:00:01.000000000Z second\n", line)

	// Output written just before the exit still arrives, then EOF.
	appendFile(t, path, criLine(2, "stdout", "F", "last words"))
	rt.exit("c1")
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	assert.Equal(t, "2024-03-01T12:00:02.000000000Z last words\n", string(rest))
}

// TestContainerLogsFollowClientGone: when the client goes away, the
// request context (which a LogSource watches) ends and so does the read.
func TestContainerLogsFollowClientGone(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "1.log", criLine(0, "stdout", "F", "first"))
	ctxs := make(chan context.Context, 1)
	open := make(chan struct{}) // never closed: the container runs on
	logs := LogSourceFunc(func(ctx context.Context, namespace, pod, container string, previous bool) (string, <-chan struct{}, error) {
		ctxs <- ctx
		return path, open, nil
	})
	hs := newTestServer(t, Config{Logs: logs})

	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/containerLogs/default/web/app?follow=1", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	srvCtx := <-ctxs
	cancel()
	resp.Body.Close()
	<-srvCtx.Done()
	assert.True(t, errors.Is(srvCtx.Err(), context.Canceled))
}

// TestParseLogOptions pins the decoding of every parameter.
func TestParseLogOptions(t *testing.T) {
	q, err := url.ParseQuery("container=app&follow=&previous=1&timestamps=TRUE&tailLines=5&limitBytes=100&sinceSeconds=60&stream=Stdout")
	require.NoError(t, err)
	o, err := ParseLogOptions(q)
	require.NoError(t, err)
	assert.Equal(t, "app", o.Container)
	assert.True(t, o.Follow, "an empty value is true, as in Kubernetes")
	assert.True(t, o.Previous)
	assert.True(t, o.Timestamps)
	assert.Equal(t, int64(5), *o.TailLines)
	assert.Equal(t, int64(100), *o.LimitBytes)
	assert.Equal(t, int64(60), *o.SinceSeconds)
	assert.Equal(t, corev1.LogStreamStdout, *o.Stream)
	assert.Nil(t, o.SinceTime)

	o, err = ParseLogOptions(url.Values{"sinceTime": {"2024-03-01T12:00:10Z"}, "tail": {"3"}})
	require.NoError(t, err)
	assert.True(t, o.SinceTime.Time.Equal(t0.Add(10*time.Second)))
	assert.Equal(t, int64(3), *o.TailLines)
	assert.False(t, o.Follow)

	for _, bad := range []string{"tailLines=x", "limitBytes=1.5", "sinceSeconds=", "sinceTime=12:00"} {
		q, _ := url.ParseQuery(bad)
		_, err := ParseLogOptions(q)
		assert.Error(t, err, bad)
	}
}

// TestValidateLogOptions mirrors Kubernetes' ValidatePodLogOptions.
func TestValidateLogOptions(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		o    corev1.PodLogOptions
		want string
	}{
		{"empty", corev1.PodLogOptions{}, ""},
		{"tail zero", corev1.PodLogOptions{TailLines: n(0)}, ""},
		{"tail negative", corev1.PodLogOptions{TailLines: n(-1)}, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{"limit zero", corev1.PodLogOptions{LimitBytes: n(0)}, "limitBytes: Invalid value: 0: must be greater than 0"},
		{"since zero", corev1.PodLogOptions{SinceSeconds: n(0)}, "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{"stream all", corev1.PodLogOptions{Stream: s("All")}, ""},
		{"stream bad", corev1.PodLogOptions{Stream: s("stdout")}, `stream: Unsupported value: "stdout"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateLogOptions(&tc.o)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidLogOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
