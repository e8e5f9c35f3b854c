package cgroups_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/internal/testutil"
)

// BenchmarkPodCgroup measures creating and configuring a Burstable pod's
// cgroup (with its QoS tier update) and one container cgroup on the host's
// real cgroups, reporting the median and 99th percentile; removal is not
// timed.
//
//	go test -run '^$' -bench PodCgroup -benchtime 300x ./cgroups/
func BenchmarkPodCgroup(b *testing.B) {
	testutil.RequireRoot(b)
	root := "/podkit-cgbench-" + randomSuffix()
	tr, err := cgroups.New(cgroups.WithRoot(root), cgroups.WithPodPidsLimit(1024))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Cleanup(func() {
		if err := tr.Cleanup(ctx); err != nil {
			b.Error(err)
		}
	})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := pod("bench", map[corev1.ResourceName]string{"cpu": "100m", "memory": "32Mi"}, map[corev1.ResourceName]string{"cpu": "500m", "memory": "64Mi"})
		start := time.Now()
		pp, err := tr.EnsurePod(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tr.EnsureContainer(ctx, pp, "app", tr.ContainerResources(&p.Spec.Containers[0])); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := tr.Remove(ctx, pp); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
