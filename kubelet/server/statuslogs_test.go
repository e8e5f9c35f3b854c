package server

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stepUntilClosed steps clk until ch closes: each step fires the
// watcher's timer once it exists.
func stepUntilClosed(clk *clocktesting.FakeClock, ch <-chan struct{}) {
	for !isClosed(ch) {
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStatusLogs(t *testing.T) {
	web := runningPod("default", "web", "app", "c1")
	rt := newFakeRuntime()
	rt.add("c1", "/var/log/pods/default_web_uid/app/1.log", true)
	rt.add("c1-prev", "/var/log/pods/default_web_uid/app/0.log", false)
	clk := clocktesting.NewFakeClock(t0)
	src := &StatusLogs{Pod: lookup(web), Runtime: rt, Clock: clk}

	path, exited, err := src.LogFile(t.Context(), "default", "web", "app", true)
	require.NoError(t, err)
	assert.Equal(t, "/var/log/pods/default_web_uid/app/0.log", path)
	assert.True(t, isClosed(exited), "the previous instance has exited")

	path, exited, err = src.LogFile(t.Context(), "default", "web", "app", false)
	require.NoError(t, err)
	assert.Equal(t, "/var/log/pods/default_web_uid/app/1.log", path)
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond) // the watcher's timer
	}
	clk.Step(time.Second) // asked once: still running
	assert.False(t, isClosed(exited))
	rt.exit("c1")
	stepUntilClosed(clk, exited)

	// A container the runtime forgot counts as exited.
	rt.add("c1", "/1.log", true)
	_, exited, err = src.LogFile(t.Context(), "default", "web", "app", false)
	require.NoError(t, err)
	rt.mu.Lock()
	delete(rt.state, "c1")
	rt.mu.Unlock()
	stepUntilClosed(clk, exited)

	for _, tc := range []struct {
		name, pod, container string
		is                   error
		msg                  string
	}{
		{"no pod", "nope", "app", ErrPodNotFound, `pod "nope" does not exist`},
		{"no container", "web", "db", ErrContainerNotFound, `container "db" not found in pod "web"`},
		{"gone from the runtime", "web", "app", nil, `container "app" in pod "web": container c1 no longer exists on this node`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := src.LogFile(t.Context(), "default", tc.pod, tc.container, false)
			require.EqualError(t, err, tc.msg)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
	rt.add("nolog", "", true)
	web.Status.ContainerStatuses[0].ContainerID = "podkit://nolog"
	_, _, err = src.LogFile(t.Context(), "default", "web", "app", false)
	assert.ErrorContains(t, err, "has no log file")
	rt.err = errors.New("supervisor down")
	_, _, err = src.LogFile(t.Context(), "default", "web", "app", false)
	assert.ErrorContains(t, err, "supervisor down")
}

// TestStatusLogsWatchEndsWithContext: the watcher ends with the request
// and does not claim an exit.
func TestStatusLogsWatchEndsWithContext(t *testing.T) {
	web := runningPod("default", "web", "app", "c1")
	rt := newFakeRuntime()
	rt.add("c1", "/1.log", true)
	clk := clocktesting.NewFakeClock(t0)
	src := &StatusLogs{Pod: lookup(web), Runtime: rt, Clock: clk}
	ctx, cancel := context.WithCancel(t.Context())
	_, exited, err := src.LogFile(ctx, "default", "web", "app", false)
	require.NoError(t, err)
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	for clk.HasWaiters() { // the timer is stopped when the watcher returns
		time.Sleep(time.Millisecond)
	}
	assert.False(t, isClosed(exited))
}

// TestPollLogFile adapts a kubelet's (path, running) lookup.
func TestPollLogFile(t *testing.T) {
	var mu sync.Mutex
	path, running, calls := "/0.log", true, 0
	var fail error
	f := func(namespace, pod, container string, previous bool) (string, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if previous {
			return "/prev.log", false, nil
		}
		return path, running, fail
	}
	set := func(p string, r bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		path, running, fail = p, r, err
	}
	clk := clocktesting.NewFakeClock(t0)
	src := PollLogFile(f, time.Second, clk)

	p, exited, err := src.LogFile(t.Context(), "default", "web", "app", true)
	require.NoError(t, err)
	assert.Equal(t, "/prev.log", p)
	assert.True(t, isClosed(exited))

	for _, tc := range []struct {
		name string
		end  func()
	}{
		{"stops running", func() { set("/0.log", false, nil) }},
		{"restarted into a new file", func() { set("/1.log", true, nil) }},
		{"lookup fails", func() { set("", false, errors.New("pod gone")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set("/0.log", true, nil)
			p, exited, err := src.LogFile(t.Context(), "default", "web", "app", false)
			require.NoError(t, err)
			assert.Equal(t, "/0.log", p)
			for !clk.HasWaiters() {
				time.Sleep(time.Millisecond)
			}
			clk.Step(time.Second)
			assert.False(t, isClosed(exited))
			tc.end()
			stepUntilClosed(clk, exited)
		})
	}

	set("", false, errors.New(`container "app" in pod "web" is waiting to start: ContainerCreating`))
	_, _, err = src.LogFile(t.Context(), "default", "web", "app", false)
	assert.EqualError(t, err, `container "app" in pod "web" is waiting to start: ContainerCreating`)
}
