package kubelet_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workerSyncs counts the pod syncs a kubelet's metrics recorded.
func workerSyncs(t testing.TB, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != "kubelet_pod_worker_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}

// restart stops the kubelet and starts a new one over the same runtime
// state (as a restarted process finds it), and waits until it synced.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.runtime = e.runtime.Reopen()
	e.cfg.Runtime = e.runtime
	e.registry = prometheus.NewRegistry()
	e.cfg.Registerer = e.registry
	e.start()
}

// waitSynced waits until the kubelet synced pods n times.
func (e *env) waitSynced(n uint64) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for workerSyncs(e.t, e.registry) < n {
		require.True(e.t, time.Now().Before(deadline), "the kubelet never synced")
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRestartedKubeletAdoptsRunningContainers(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}, []string{"sleep", "inf"}))
	before := e.waitPod("web", "Running", running)
	n := len(e.runtime.Calls())

	e.restart()
	e.waitSynced(1)
	// The reopened runner shares the call log: look at the new calls.
	for _, c := range e.runtime.Calls()[n:] {
		switch c.Op {
		case "RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "StopPodSandbox", "RemoveContainer":
			t.Errorf("the restarted kubelet called %s", c.Op)
		}
	}
	after := e.get("web")
	assert.True(t, running(after), dump(after))
	for _, name := range []string{"app", "app1"} {
		b, a := containerStatus(before, name), containerStatus(after, name)
		assert.Equal(t, b.ContainerID, a.ContainerID, "%s keeps its container", name)
		assert.Zero(t, a.RestartCount)
	}
	assert.Equal(t, before.Status.PodIP, after.Status.PodIP)

	// The adopted pod is managed as before: deleting it tears it down.
	deleted := e.watchDeletion("web")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{}))
	<-deleted
	sbs, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, sbs)
	assert.Empty(t, ctrs)
}

func TestRestartedKubeletRestartsWhatExitedMeanwhile(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}))
	before := e.waitPod("web", "Running", running)
	e.stop()
	_, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	require.Len(t, ctrs, 1)
	require.NoError(t, e.runtime.Exit(context.Background(), ctrs[0].ID, 2))

	e.restart()
	after := e.waitPod("web", "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount == 1 && cs.State.Running != nil
	})
	last := containerStatus(after, "app").LastTerminationState.Terminated
	require.NotNil(t, last)
	assert.Equal(t, int32(2), last.ExitCode)
	assert.Equal(t, containerStatus(before, "app").ContainerID, last.ContainerID)
}

func TestOrphanedPodIsTornDown(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}))
	e.waitPod("web", "Running", running)
	e.stop()
	// Deleted for good while no kubelet was watching.
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "web",
		metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}))
	e.restart()
	deadline := time.Now().Add(waitTimeout)
	for {
		sbs, ctrs, err := e.runtime.List(context.Background())
		require.NoError(t, err)
		if len(sbs) == 0 && len(ctrs) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "orphan left: %d sandboxes, %d containers", len(sbs), len(ctrs))
		e.step(time.Second) // relists
		time.Sleep(10 * time.Millisecond)
	}
	assert.Empty(t, e.snaps.Active())
}
