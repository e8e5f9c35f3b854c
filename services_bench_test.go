package podkit

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkServiceReadyToRouting measures, through a real pod, the time
// from the pod becoming Ready in the API (the watch event carrying
// Ready=True, as every controller sees it) to its Service's ClusterIP
// routing a new connection to it (the first successful TCP connect from
// the host, probed every millisecond; before that the proxy rejects with a
// reset). Each iteration turns the only backend unready, waits until the
// ClusterIP rejects, turns it ready again and times the way back: kubelet
// probe → status → EndpointSlice controller → proxy sync. Run it with
// -benchtime=Nx: each iteration waits for a probe period (1 s).
// The sub-benchmark minsync=1s runs the proxy with kube-proxy's default
// minSyncPeriod, for comparison.
func BenchmarkServiceReadyToRouting(b *testing.B) {
	for _, tc := range []struct {
		name    string
		minSync time.Duration
	}{{"minsync=0", 0}, {"minsync=1s", time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			benchReadyToRouting(b, tc.minSync)
		})
	}
}

func benchReadyToRouting(b *testing.B, minSync time.Duration) {
	e := newSvcEnv(b, "127.0.0.1:9", func(nc *NodeConfig) { nc.Services.MinSyncPeriod = minSync })
	ctx := context.Background()
	e.createPods(backend("web-0", e.c.Image(svcImage), map[string]string{"app": "web"}))
	svc, err := e.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	require.NoError(b, err)
	e.waitReady("web-0")
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	routed := func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	require.Eventually(b, routed, time.Minute, 5*time.Millisecond)

	// Ready transitions as the API's watchers see them.
	w, err := e.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "web-0").String()})
	require.NoError(b, err)
	defer w.Stop()
	var readyAt atomic.Int64 // unix nanos of the latest not-ready → ready event
	go func() {
		was := true
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := podReady(p)
			if now && !was {
				readyAt.Store(time.Now().UnixNano())
			}
			was = now
		}
	}()

	var samples []time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := e.exec("web-0", "unready")
		require.NoError(b, err)
		require.Eventually(b, func() bool { return !routed() }, time.Minute, 5*time.Millisecond, "route removed")
		readyAt.Store(0)
		_, err = e.exec("web-0", "ready")
		require.NoError(b, err)
		var routedAt time.Time
		require.Eventually(b, func() bool {
			if routed() {
				routedAt = time.Now()
				return true
			}
			return false
		}, time.Minute, time.Millisecond, "routed again")
		require.Eventually(b, func() bool { return readyAt.Load() != 0 }, time.Minute, time.Millisecond, "Ready event")
		samples = append(samples, routedAt.Sub(time.Unix(0, readyAt.Load())))
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	slices.Sort(samples)
	pct := func(p float64) time.Duration { return samples[min(len(samples)-1, int(p*float64(len(samples))))] }
	b.ReportMetric(float64(pct(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(samples[0].Microseconds())/1000, "min-ms")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.Logf("ready→routing over %d transitions: %v", len(samples), fmt.Sprint(samples))
}

// cpuTime is this process's user+sys time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
