package apiserver_test

// The etcd storage benchmarks: pod creates per second and watch delivery
// latency through the API server on the etcd store, side by side with the
// bolt store in the same run, plus raw single-client etcd puts (the figure
// etcd publishes: ≈583 writes/s at 1.6 ms on SSD-backed VMs). They reuse
// bench_test.go's helpers. Results and the command: docs/benchmarks.md,
// section "etcd storage".

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

// openEtcdStore starts a one-member etcd (fsync on, data in a temporary
// directory on the same disk as the bolt file) and opens a store on it.
func openEtcdStore(b *testing.B) (storage.Store, *etcdtest.Cluster) {
	c := etcdtest.Start(b)
	st, err := etcd.New(context.Background(), etcd.Config{Endpoints: c.Endpoints(), Codec: scheme.StorageCodec(scheme.New())},
		etcd.WithLogger(discardLogger()), etcd.WithCompactionInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st, c
}

// benchStore opens a store of kind; the returned function, called with
// the number of operations once they are done, reports the CPU time the
// etcd server process used per operation since benchStore returned
// (server-cpu-µs/op; the bolt store runs in the benchmark's process, so
// its CPU is all in cpu-µs/op already).
func benchStore(b *testing.B, kind string) (storage.Store, func(ops int)) {
	if kind != "etcd" {
		return openStore(b, kind), func(int) {}
	}
	st, c := openEtcdStore(b)
	m := c.Members[0]
	start, err := m.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return st, func(ops int) {
		end, err := m.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64((end-start).Microseconds())/float64(ops), "server-cpu-µs/op")
	}
}

// BenchmarkEtcdPodCreate: concurrent creates (createParallelism ×
// GOMAXPROCS clients, protobuf over HTTP) and one client creating one pod
// after another, on bolt and etcd.
func BenchmarkEtcdPodCreate(b *testing.B) {
	for _, kind := range []string{"bolt", "etcd"} {
		b.Run(kind+"/concurrent", func(b *testing.B) {
			st, serverCPU := benchStore(b, kind)
			client := newBenchEnv(b, st).clientset(b, true)
			runCreates(b, func(ctx context.Context, name string, i int) error {
				_, err := client.CoreV1().Pods(benchNamespace).Create(ctx, benchPod(name, i), metav1.CreateOptions{})
				return err
			})
			serverCPU(b.N)
		})
		b.Run(kind+"/one-client", func(b *testing.B) {
			st, serverCPU := benchStore(b, kind)
			benchCreateSequential(b, st)
			serverCPU(b.N)
		})
	}
}

func benchCreateSequential(b *testing.B, st storage.Store) {
	ctx := context.Background()
	pods := newBenchEnv(b, st).clientset(b, true).CoreV1().Pods(benchNamespace)
	var lat latencies
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cpuMeter(b)
	for i := range b.N {
		start := time.Now()
		if _, err := pods.Create(ctx, benchPod(fmt.Sprintf("seq-%08d", i), i), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	cpu(b.N)
	lat.add(d)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	lat.report(b)
}

// BenchmarkEtcdRawPut is etcd's own single-client write benchmark on this
// machine: one client putting 256-byte values under distinct keys.
func BenchmarkEtcdRawPut(b *testing.B) {
	c := etcdtest.Start(b)
	cli := c.Client(b)
	start, err := c.Members[0].CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	val := string(make([]byte, 256))
	var lat latencies
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := cli.Put(ctx, "/bench/"+strconv.Itoa(i), val); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	lat.add(d)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	lat.report(b)
	end, err := c.Members[0].CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((end-start).Microseconds())/float64(b.N), "server-cpu-µs/op")
}

// BenchmarkEtcdWatchLatency is BenchmarkWatchLatency (100 watchers,
// protobuf, writes on a ticker) on bolt and etcd.
func BenchmarkEtcdWatchLatency(b *testing.B) {
	for _, kind := range []string{"bolt", "etcd"} {
		for _, rate := range []int{20, 100} {
			b.Run(fmt.Sprintf("%s/%dwps", kind, rate), func(b *testing.B) {
				st, serverCPU := benchStore(b, kind)
				benchWatch(b, st, true, rate)
				serverCPU(b.N)
			})
		}
	}
}
