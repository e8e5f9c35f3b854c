package storagetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// RunBenchmarks measures a backend: parallel creates (each acknowledged
// write as durable as the backend makes it), List of 10,000 pods (whole and
// in pages of 500), and watch fan-out to 100 watchers with the delivery
// latency from the start of a write to each watcher receiving it.
// newStore must return a new, empty store and close it in b.Cleanup.
func RunBenchmarks(b *testing.B, newStore func(b *testing.B) storage.Store) {
	b.Run("CreateParallel", func(b *testing.B) { benchCreateParallel(b, newStore(b)) })
	b.Run("List10k", func(b *testing.B) { benchList(b, newStore(b), 0) })
	b.Run("List10kPaged500", func(b *testing.B) { benchList(b, newStore(b), 500) })
	b.Run("WatchFanout100", func(b *testing.B) { benchFanout(b, newStore(b), 100) })
}

func benchCreateParallel(b *testing.B, st storage.Store) {
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(32) // many writers in flight, as a busy API server has
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			name := fmt.Sprintf("p%09d", n)
			if _, err := st.Create(ctx, podKey("bench", name), newPod("bench", name, nil)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}

// fill creates n pods with 32 concurrent writers.
func fill(b *testing.B, st storage.Store, n int) {
	ctx := context.Background()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				ns := fmt.Sprintf("ns%02d", i%10)
				name := fmt.Sprintf("p%06d", i)
				pod := newPod(ns, name, map[string]string{"app": "web", "tier": "frontend"})
				pod.Spec.NodeName = "node-1"
				if _, err := st.Create(ctx, podKey(ns, name), pod); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func benchList(b *testing.B, st storage.Store, limit int64) {
	const n = 10000
	fill(b, st, n)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		opts := storage.ListOptions{Limit: limit}
		for {
			res, err := st.List(ctx, podPrefix(""), opts)
			if err != nil {
				b.Fatal(err)
			}
			got += len(res.Items)
			if res.Continue == "" {
				break
			}
			opts.Continue = res.Continue
		}
		if got != n {
			b.Fatalf("listed %d objects, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
}

// benchFanout updates one object per iteration and waits until every
// watcher has received the event; the write's start time travels in an
// annotation, so each receipt yields one latency sample.
func benchFanout(b *testing.B, st storage.Store, watchers int) {
	ctx := context.Background()
	key := cmKey("bench", "fanout")
	if _, err := st.Create(ctx, key, newConfigMap("bench", "fanout", map[string]string{"n": "0"})); err != nil {
		b.Fatal(err)
	}
	var (
		mu  sync.Mutex
		lat []time.Duration
		wg  sync.WaitGroup
	)
	reached := make(chan struct{}, watchers)
	ws := make([]watch.Interface, 0, watchers)
	for range watchers {
		w, err := st.Watch(ctx, storage.Key(configMapsGR, "bench", ""), storage.WatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ws = append(ws, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ev := range w.ResultChan() {
				now := time.Now()
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				if t0, err := strconv.ParseInt(cm.Annotations[startAnnotation], 10, 64); err == nil {
					mine = append(mine, now.Sub(time.Unix(0, t0)))
				}
				reached <- struct{}{}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	b.ReportAllocs()
	for b.Loop() {
		_, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
			cm := cur.(*corev1.ConfigMap)
			cm.Annotations = map[string]string{startAnnotation: strconv.FormatInt(time.Now().UnixNano(), 10)}
			return cm, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for range watchers {
			<-reached
		}
	}
	b.StopTimer()
	for _, w := range ws {
		w.Stop()
	}
	wg.Wait()
	if len(lat) == 0 {
		b.Fatal("no latency samples")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "deliveries/s")
}

const startAnnotation = "bench.podkit.io/start-unix-nano"
