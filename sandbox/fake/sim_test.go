package fake_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
)

// TestThousandNodes runs a thousand-node simulation in virtual time: ten
// pods per node whose containers exit after 1 to 10 virtual seconds. It
// checks the fake costs no goroutine per container and that every exit
// happens on time.
func TestThousandNodes(t *testing.T) {
	const nodes, pods = 1000, 10
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	goroutines := runtime.NumGoroutine()
	runners := make([]*fake.Runner, nodes)
	ids := make([][]string, nodes)
	for n := range runners {
		cidr := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(n >> 8), byte(n), 0}), 24)
		r, err := fake.New(fake.WithClock(clk), fake.WithPodCIDR(cidr), fake.WithCallRecording(false), fake.WithIDSeed("node-"+strconv.Itoa(n)))
		require.NoError(t, err)
		runners[n] = r
		for p := range pods {
			sb, err := r.RunPodSandbox(ctx, &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: "p" + strconv.Itoa(p), Namespace: "sim", UID: fmt.Sprintf("%d-%d", n, p)}})
			require.NoError(t, err)
			id, err := r.CreateContainer(ctx, sb.ID, ctrCfg("app", "sleep", strconv.Itoa(p+1)))
			require.NoError(t, err)
			require.NoError(t, r.StartContainer(ctx, id))
			ids[n] = append(ids[n], id)
		}
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "no goroutine per container")
	assert.Equal(t, nodes*pods, clk.Waiters(), "one timer per container that exits by itself")

	for sec := 1; sec <= pods; sec++ {
		clk.Step(time.Second)
		for n, r := range runners {
			st := status(t, r, ids[n][sec-1])
			require.Equal(t, sandbox.ContainerStateExited, st.State, "node %d pod %d at %ds", n, sec-1, sec)
			require.Equal(t, epoch.Add(time.Duration(sec)*time.Second), st.FinishedAt)
		}
	}
	assert.Zero(t, clk.Waiters())
}

// BenchmarkPodLifecycle measures a pod's whole life in the fake: run,
// create, start, stop, remove.
func BenchmarkPodLifecycle(b *testing.B) {
	ctx := context.Background()
	r := newRunner(b, fake.WithCallRecording(false), fake.WithPodCIDR(netip.MustParsePrefix("10.0.0.0/8")))
	ctr := ctrCfg("app", "sleep", "inf")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sb, err := r.RunPodSandbox(ctx, &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: "p", Namespace: "bench", UID: strconv.Itoa(i)}})
		if err != nil {
			b.Fatal(err)
		}
		id, err := r.CreateContainer(ctx, sb.ID, ctr)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
		if err := r.StopContainer(ctx, id, time.Second); err != nil {
			b.Fatal(err)
		}
		if err := r.RemovePodSandbox(ctx, sb.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunningPodMemory reports the heap a running pod (sandbox plus
// one container) costs in the fake.
func BenchmarkRunningPodMemory(b *testing.B) {
	ctx := context.Background()
	r := newRunner(b, fake.WithCallRecording(false), fake.WithPodCIDR(netip.MustParsePrefix("10.0.0.0/8")))
	ctr := ctrCfg("app", "sleep", "inf")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		sb, err := r.RunPodSandbox(ctx, &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: "p", Namespace: "bench", UID: strconv.Itoa(n)}})
		if err != nil {
			b.Fatal(err)
		}
		id, err := r.CreateContainer(ctx, sb.ID, ctr)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/pod")
	runtime.KeepAlive(r)
}

// TestConcurrentUse drives one runner from many goroutines on the real
// clock, with timers firing, stops waiting out grace periods and an event
// subscriber, for the race detector.
func TestConcurrentUse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRunner(t)
	events, err := r.Events(ctx)
	require.NoError(t, err)
	var counted atomic.Int64
	go func() {
		for range events {
			counted.Add(1)
		}
	}()
	const workers, each = 8, 25
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				for i := range each {
					sb, err := r.RunPodSandbox(ctx, podCfg(fmt.Sprintf("w%d-%d", w, i)))
					if err != nil {
						return err
					}
					var ids []string
					for _, args := range [][]string{{"sleep", "0.001"}, {"ignore-term"}, {"exit", "1"}} {
						id, err := r.CreateContainer(ctx, sb.ID, ctrCfg(args[0], args...))
						if err != nil {
							return err
						}
						if err := r.StartContainer(ctx, id); err != nil {
							return err
						}
						ids = append(ids, id)
					}
					if _, _, err := r.List(ctx); err != nil {
						return err
					}
					if err := r.StopContainer(ctx, ids[1], time.Millisecond); err != nil {
						return err
					}
					if err := r.RemovePodSandbox(ctx, sb.ID); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	sbs, cs, err := r.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, sbs)
	assert.Empty(t, cs)
	// Created, Started, Stopped, Deleted for each of 3 containers.
	require.Eventually(t, func() bool { return counted.Load() == workers*each*3*4 }, 10*time.Second, time.Millisecond,
		"events seen: %d", counted.Load())
}
