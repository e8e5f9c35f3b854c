package sim_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/examples/simulated-cluster/sim"
)

// A pod on a simulated node becomes Running and Ready with the events a
// configured Kubernetes node records (no DNS fallback warning: the nodes
// have a cluster DNS address), and the nodes' files live under Config.Dir
// until Stop.
func TestPodRunsOnSimulatedNode(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	c, err := sim.Start(ctx, sim.Config{Nodes: 2, Dir: dir})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			assert.NoError(t, c.Stop())
		}
	})
	require.NoError(t, c.WaitNodesReady(ctx, 2*time.Minute))

	pods := c.Client().CoreV1().Pods("default")
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "sim/app:1"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && controller.IsPodReady(p)
	}, 2*time.Minute, 20*time.Millisecond, "the pod never became Running and Ready")

	var reasons []string
	require.Eventually(t, func() bool {
		evs, err := c.Client().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		reasons = reasons[:0]
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "web" && e.Source.Component == "kubelet" {
				reasons = append(reasons, e.Reason)
			}
		}
		return len(reasons) >= 3
	}, 2*time.Minute, 20*time.Millisecond, "the kubelet's events never came")
	assert.Subset(t, reasons, []string{"Created", "Started"})
	assert.NotContains(t, reasons, "DNSConfigForming")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "one cluster directory under Config.Dir")
	stopped = true
	require.NoError(t, c.Stop())
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "Stop removes the nodes' files")
}
