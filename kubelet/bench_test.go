package kubelet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/internal/procstat"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/sandbox/fake"
)

// newRealClockEnv is newEnv on the real clock, for benchmarks.
func newRealClockEnv(b *testing.B) *env {
	e := newEnv(b, func(c *kubelet.Config) { c.Clock = clock.RealClock{} })
	r, err := fake.New(fake.WithIDSeed(b.Name()), fake.WithCallRecording(false))
	require.NoError(b, err)
	e.runtime, e.cfg.Runtime = r, r
	e.start()
	return e
}

// waitRunning watches until n pods named prefix-* run.
func waitRunning(b *testing.B, e *env, w watch.Interface, n int) {
	seen := map[string]bool{}
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if ok && running(p) {
			seen[p.Name] = true
			if len(seen) == n {
				return
			}
		}
	}
	b.Fatalf("only %d of %d pods ran", len(seen), n)
}

// BenchmarkPodStartup measures create → Running observed through a watch,
// one pod at a time, on the in-memory runtime (the kubelet's own cost).
// Each pod is deleted (untimed) once Running: the node admits at most 110
// pods, and a longer run would otherwise wait forever for the 111th.
func BenchmarkPodStartup(b *testing.B) {
	e := newRealClockEnv(b)
	ctx := context.Background()
	pods := e.client.CoreV1().Pods("default")
	zero := int64(0)
	b.ResetTimer()
	cpu0 := procstat.SelfCPU()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("seq-%d", i)
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		require.NoError(b, err)
		e.create(e.pod(name, []string{"sleep", "inf"}))
		waitRunning(b, e, w, 1)
		w.Stop()
		b.StopTimer()
		require.NoError(b, pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		b.StartTimer()
	}
	// Includes the deletions' and the in-process API server's share.
	b.ReportMetric(float64(procstat.SelfCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/pod")
}

// BenchmarkPodStartupBurst100 measures 100 pods created at once until all
// are Running.
func BenchmarkPodStartupBurst100(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newRealClockEnv(b)
		w, err := e.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
		require.NoError(b, err)
		b.StartTimer()
		start, cpu0 := time.Now(), procstat.SelfCPU()
		for j := range 100 {
			e.create(e.pod(fmt.Sprintf("burst-%d", j), []string{"sleep", "inf"}))
		}
		waitRunning(b, e, w, 100)
		b.ReportMetric(time.Since(start).Seconds(), "s/burst")
		// Kubelet and in-process API server together.
		b.ReportMetric(float64(procstat.SelfCPU()-cpu0)/float64(time.Millisecond)/100, "cpu-ms/pod")
		b.StopTimer()
		w.Stop()
		e.stop()
	}
}
