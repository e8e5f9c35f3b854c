package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The size CI runs on every change; the full 1,000 × 10,000 run is
// BenchmarkThousandNodes (and `go run`).
var (
	testNodes = flag.Int("sim.nodes", 100, "nodes of TestSimulate")
	testPods  = flag.Int("sim.pods", 1000, "pods of TestSimulate")
)

// TestSimulate runs the example at a CI-sized scale: every pod is bound,
// Running, and the scheduler spreads them over the nodes.
func TestSimulate(t *testing.T) {
	if testing.Short() {
		*testNodes, *testPods = 10, 100
	}
	r, err := simulate(t.Context(), options{Nodes: *testNodes, Pods: *testPods, Creators: 8, Timeout: 5 * time.Minute})
	require.NoError(t, err)
	var out strings.Builder
	r.print(&out)
	t.Log("\n" + out.String())
	assert.Equal(t, *testPods, r.Pods)
	assert.LessOrEqual(t, r.Bound, r.Running, "bound before Running")
	assert.Zero(t, r.Empty, "every node got pods")
	assert.LessOrEqual(t, r.PodsOnBusiestNode, 2*(*testPods)/(*testNodes), "the default scorers balance the nodes")
}

// BenchmarkThousandNodes is the example at full size: 1,000 nodes,
// 10,000 pods (go test -run '^$' -bench ThousandNodes -benchtime 1x).
func BenchmarkThousandNodes(b *testing.B) {
	for b.Loop() {
		r, err := simulate(b.Context(), options{Nodes: 1000, Pods: 10000, Creators: 16, Timeout: 15 * time.Minute})
		require.NoError(b, err)
		b.ReportMetric(r.Running.Seconds(), "s-to-running")
		b.ReportMetric(r.Bound.Seconds(), "s-to-bound")
		b.ReportMetric(r.CPU.Seconds(), "cpu-s")
		b.ReportMetric(float64(r.PeakRSSMiB), "peak-MiB")
	}
}
