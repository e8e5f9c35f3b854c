package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestRunSmall(t *testing.T) {
	for _, w := range []string{"basic", "spread", "antiaffinity"} {
		t.Run(w, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := run(ctx, config{Workload: w, Nodes: 10, Pods: 40})
			require.NoError(t, err)
			assert.Equal(t, 40, res.Pods)
			assert.Positive(t, res.PodsPerSecond)
			assert.Positive(t, res.P99AttemptMillis)
			assert.Equal(t, 40, res.ScheduledEvents, "a Scheduled event per pod")
		})
	}
	_, err := run(context.Background(), config{Workload: "nope"})
	assert.Error(t, err)
}

// TestRunWindowProfiles: the pods/s window's CPU is reported, and the
// window's CPU and heap profiles are written when asked for.
func TestRunWindowProfiles(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := config{Workload: "basic", Nodes: 10, Pods: 40,
		WindowProfile: filepath.Join(dir, "cpu"), WindowAllocProfile: filepath.Join(dir, "heap")}
	res, err := run(ctx, cfg)
	require.NoError(t, err)
	assert.Positive(t, res.CPUMicrosPerPod)
	assert.GreaterOrEqual(t, res.BindCPUMicrosPerPod, 0.0)
	for _, name := range []string{"cpu", "heap.base", "heap"} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Positive(t, st.Size(), name)
	}
}

func TestBenchTransportKeepsConnectionsForEveryBind(t *testing.T) {
	tr := benchTransport()
	assert.GreaterOrEqual(t, tr.MaxIdleConnsPerHost, 64+16, "the scheduler's binds in flight plus event writes")
}

func TestBindingViewKeepsIdentityAndNode(t *testing.T) {
	in := basePod(3)
	in.UID, in.ResourceVersion, in.Spec.NodeName = "u", "7", "node-1"
	out, err := bindingView(in)
	require.NoError(t, err)
	p := out.(*corev1.Pod)
	assert.Equal(t, []string{"default", "pod-000003", "u", "7", "node-1"},
		[]string{p.Namespace, p.Name, string(p.UID), p.ResourceVersion, p.Spec.NodeName})
	assert.Empty(t, p.Spec.Containers)
	tomb := cache.DeletedFinalStateUnknown{Key: "k"}
	same, err := bindingView(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, same)
}
