package apiserver_test

// API server benchmarks: pod creates per second, list latency at 10,000
// pods and watch delivery latency to 100 watchers, measured through real
// HTTP on 127.0.0.1 with client-go, plus the fsync latency of the disk the
// bolt store writes to. Results and the exact command: docs/benchmarks.md.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

const (
	// createParallelism × GOMAXPROCS clients create concurrently (16 on two
	// cores): enough writes in flight for the bolt store's group commit.
	createParallelism = 8
	// listPods is the size of the listed collection.
	listPods = 10000
	// watchers is the number of concurrent watches.
	watchers = 100

	benchNamespace  = "default"
	sentAnnotation  = "bench.podkit.io/sent-unix-nano"
	namePlaceholder = "zz-name-placeholder-zz"
)

// openStore opens an empty "memory" or "bolt" store, closed when the
// benchmark ends. The bolt file is fsynced on every commit.
func openStore(b *testing.B, kind string) storage.Store {
	var st storage.Store = memory.New(memory.WithLogger(discardLogger()))
	if kind == "bolt" {
		var err error
		path := filepath.Join(b.TempDir(), "state.db")
		if st, err = bolt.Open(path, scheme.StorageCodec(scheme.New()), bolt.WithLogger(discardLogger())); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// benchEnv is an in-process API server served over HTTP on 127.0.0.1.
type benchEnv struct {
	handler   http.Handler
	url       string
	transport *http.Transport
}

func newBenchEnv(b *testing.B, st storage.Store) *benchEnv {
	b.Helper()
	srv, err := apiserver.New(apiserver.Config{Store: st, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	// Over plain HTTP client-go falls back to http.DefaultTransport, which
	// keeps only 2 idle connections per host: 16 concurrent clients would
	// then dial a new connection for most requests. Over HTTPS client-go
	// builds its own transport (25 idle per host, HTTP/2); give the clients
	// here keep-alive connections for all of them.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	b.Cleanup(func() {
		tr.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
	})
	return &benchEnv{handler: srv.Handler(), url: hs.URL, transport: tr}
}

// clientset returns a client-go clientset without client-side rate limits,
// speaking JSON (as kubectl does) or protobuf. The media type is always set:
// left empty, client-go v0.37's typed clients default to protobuf.
func (e *benchEnv) clientset(b *testing.B, protobuf bool) *kubernetes.Clientset {
	b.Helper()
	rc := &rest.Config{Host: e.url, QPS: -1, Transport: e.transport,
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}}
	if protobuf {
		rc.ContentType = "application/vnd.kubernetes.protobuf"
		rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchPod is a realistic workload pod: two containers with resources,
// ports, environment and a probe, labels as a Deployment sets them, and a
// shard label (i mod 10) for label-selected lists.
func benchPod(name string, i int) *corev1.Pod {
	res := func(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"app.kubernetes.io/name": "shop", "app.kubernetes.io/component": "web",
			"pod-template-hash": "6d8f9c7b5d", "shard": strconv.Itoa(i % 10),
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{
				Name: "web", Image: "registry.local/shop/web:1.4.2",
				Args:      []string{"--listen=:8080", "--log-level=info"},
				Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env:       []corev1.EnvVar{{Name: "SHOP_MODE", Value: "production"}, {Name: "SHOP_CACHE_MB", Value: "64"}},
				Resources: res("100m", "128Mi", "500m", "256Mi"),
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
				}},
			},
			{
				Name: "proxy", Image: "registry.local/mesh/proxy:2.1.0",
				Args:      []string{"--upstream=127.0.0.1:8080"},
				Ports:     []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}},
				Resources: res("50m", "64Mi", "200m", "128Mi"),
			},
		}},
	}
}

// podBody returns benchPod(namePlaceholder, i) as JSON, for requests that
// go straight to the handler; substitute the name with bytes.Replace.
func podBody(b *testing.B, i int) []byte {
	b.Helper()
	var buf bytes.Buffer
	codec := scheme.Codecs(scheme.New()).LegacyCodec(corev1.SchemeGroupVersion)
	if err := codec.Encode(benchPod(namePlaceholder, i), &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// serve sends a request for the pods of benchNamespace straight to the
// handler (a JSON body when body is not nil) and checks the status code.
func serve(h http.Handler, method, accept string, body []byte, code int) (*httptest.ResponseRecorder, error) {
	req := httptest.NewRequest(method, "/api/v1/namespaces/"+benchNamespace+"/pods", bytes.NewReader(body))
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != code {
		return nil, fmt.Errorf("%s: HTTP %d, want %d: %.300s", method, rec.Code, code, rec.Body.String())
	}
	return rec, nil
}

// cpuMeter starts counting the CPU time (user and system) of the whole
// process: server, clients and GC together; the func it returns reports it
// per op. Unlike wall-clock throughput, other tenants of a shared machine
// barely move it.
func cpuMeter(b *testing.B) (report func(ops int)) {
	now := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := now()
	return func(ops int) { b.ReportMetric(float64((now()-start).Microseconds())/float64(ops), "cpu-µs/op") }
}

// latencies collects samples from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

// report sorts the samples and reports percentiles in milliseconds.
func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		b.Fatal("no latency samples")
	}
	slices.Sort(l.d)
	ms := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))]) / 1e6 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkPodCreate measures pod creates per second with 16 concurrent
// clients: through real HTTP with client-go (JSON and protobuf), and
// through Handler().ServeHTTP with a recorder, which leaves out the HTTP
// stack, the connection and the client. The bolt store acknowledges a
// create only after its transaction is fsynced.
func BenchmarkPodCreate(b *testing.B) {
	for _, kind := range []string{"memory", "bolt"} {
		b.Run(kind+"/http-json", func(b *testing.B) { benchCreateHTTP(b, openStore(b, kind), false) })
		b.Run(kind+"/http-protobuf", func(b *testing.B) { benchCreateHTTP(b, openStore(b, kind), true) })
		b.Run(kind+"/handler-json", func(b *testing.B) { benchCreateHandler(b, openStore(b, kind)) })
	}
}

func benchCreateHTTP(b *testing.B, st storage.Store, protobuf bool) {
	env := newBenchEnv(b, st)
	client := env.clientset(b, protobuf)
	runCreates(b, func(ctx context.Context, name string, i int) error {
		_, err := client.CoreV1().Pods(benchNamespace).Create(ctx, benchPod(name, i), metav1.CreateOptions{})
		return err
	})
}

func benchCreateHandler(b *testing.B, st storage.Store) {
	env := newBenchEnv(b, st)
	tmpl := podBody(b, 0)
	runCreates(b, func(_ context.Context, name string, _ int) error {
		body := bytes.Replace(tmpl, []byte(namePlaceholder), []byte(name), 1)
		_, err := serve(env.handler, http.MethodPost, "application/json", body, http.StatusCreated)
		return err
	})
}

// runCreates runs create with unique names from concurrent goroutines and
// reports creates/s and the per-create latency percentiles.
func runCreates(b *testing.B, create func(ctx context.Context, name string, i int) error) {
	ctx := context.Background()
	var (
		seq atomic.Int64
		lat latencies
	)
	b.SetParallelism(createParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuMeter(b)
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		defer func() { lat.add(mine) }()
		for pb.Next() {
			i := int(seq.Add(1))
			start := time.Now()
			if err := create(ctx, fmt.Sprintf("web-%08d", i), i); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(start))
		}
	})
	b.StopTimer()
	cpu(b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	lat.report(b)
}

// BenchmarkPodList measures listing 10,000 pods through client-go: whole
// (JSON and protobuf), in pages of 500 (the reflector's and kubectl's page
// size; one op is the walk over all 20 pages) and with a label selector
// matching 1,000 of them; the handler variants serve the whole list through
// Handler().ServeHTTP into a recorder: the server's share without the
// connection and the client's decoding. ms/op is the time of one complete
// list; resp-MB the size of the unpaginated response.
func BenchmarkPodList(b *testing.B) {
	for _, kind := range []string{"memory", "bolt"} {
		b.Run(kind, func(b *testing.B) {
			env := newBenchEnv(b, openStore(b, kind))
			fillPods(b, env.handler, listPods)
			for _, enc := range []struct {
				name     string
				protobuf bool
				accept   string
			}{{"json", false, "application/json"}, {"protobuf", true, "application/vnd.kubernetes.protobuf"}} {
				pods := env.clientset(b, enc.protobuf).CoreV1().Pods(benchNamespace)
				size := responseSize(b, env.handler, enc.accept)
				b.Run("full-"+enc.name, func(b *testing.B) {
					benchList(b, pods.List, metav1.ListOptions{}, listPods)
					b.ReportMetric(float64(size)/1e6, "resp-MB")
				})
				b.Run("full-"+enc.name+"-handler", func(b *testing.B) {
					b.ReportAllocs()
					cpu := cpuMeter(b)
					for b.Loop() {
						responseSize(b, env.handler, enc.accept)
					}
					cpu(b.N)
					b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
				})
				b.Run("paged500-"+enc.name, func(b *testing.B) {
					benchList(b, pods.List, metav1.ListOptions{Limit: 500}, listPods)
				})
				b.Run("selector-"+enc.name, func(b *testing.B) {
					benchList(b, pods.List, metav1.ListOptions{LabelSelector: "shard=3"}, listPods/10)
				})
			}
		})
	}
}

type listFunc func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)

// benchList lists (following continue tokens) until want pods were read.
func benchList(b *testing.B, list listFunc, opts metav1.ListOptions, want int) {
	ctx := context.Background()
	pages := 0
	b.ReportAllocs()
	cpu := cpuMeter(b)
	for b.Loop() {
		got, o := 0, opts
		for {
			l, err := list(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			pages++
			got += len(l.Items)
			if l.Continue == "" {
				break
			}
			o.Continue = l.Continue
		}
		if got != want {
			b.Fatalf("listed %d pods, want %d", got, want)
		}
	}
	cpu(b.N)
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
	if pages > b.N {
		b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(pages), "ms/page")
	}
}

// fillPods creates pods 0..n-1 through the handler from 16 goroutines.
func fillPods(b *testing.B, h http.Handler, n int) {
	b.Helper()
	tmpls := make([][]byte, 10)
	for i := range tmpls {
		tmpls[i] = podBody(b, i)
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				body := bytes.Replace(tmpls[i%10], []byte(namePlaceholder), fmt.Appendf(nil, "web-%05d", i), 1)
				if _, err := serve(h, http.MethodPost, "application/json", body, http.StatusCreated); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// responseSize is the body size of an unpaginated list in the media type.
func responseSize(b *testing.B, h http.Handler, accept string) int {
	rec, err := serve(h, http.MethodGet, accept, nil, http.StatusOK)
	if err != nil {
		b.Fatal(err)
	}
	return rec.Body.Len()
}

// BenchmarkWatchLatency measures event delivery to 100 client-go watches
// over HTTP (memory store). One writer issues a steady number of writes
// per second on a ticker (20/s: 2,000 deliveries/s; 100/s: 10,000),
// alternately creating a pod and updating the pod it created last; every
// write carries its send time in an annotation, and each watcher records
// receive time minus send time, so a sample covers the write request,
// commit, fan-out, encoding, the connection and client-side decoding. One
// op is one write (ns/op is therefore about one tick).
func BenchmarkWatchLatency(b *testing.B) {
	for _, enc := range []struct {
		name     string
		protobuf bool
	}{{"json", false}, {"protobuf", true}} {
		for _, rate := range []int{20, 100} {
			b.Run(fmt.Sprintf("%s/%dwps", enc.name, rate), func(b *testing.B) {
				deliveries := benchWatch(b, openStore(b, "memory"), enc.protobuf, rate)
				b.ReportMetric(float64(deliveries)/b.Elapsed().Seconds(), "deliveries/s")
			})
		}
	}
}

// benchWatch runs BenchmarkWatchLatency's measurement on st and returns
// the number of deliveries measured.
func benchWatch(b *testing.B, st storage.Store, protobuf bool, rate int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := newStoreClock(st)
	pods := newBenchEnv(b, clock).clientset(b, protobuf).CoreV1().Pods(benchNamespace)
	start, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	want := b.N
	synced := make(chan struct{}, watchers)         // one per watcher that saw the "sync" pod
	results := make(chan []time.Duration, watchers) // one per watcher: its samples
	for range watchers {
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		go watchLoop(w, want, synced, results)
	}
	// Every watch is registered once it has seen a write made after it.
	if _, err := pods.Create(ctx, benchPod("sync", 0), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	receive(b, synced, watchers, "the sync pod")

	b.ResetTimer()
	cpu := cpuMeter(b)
	_, sent := writeTimed(b, ctx, pods, rate, want)
	var lat latencies
	samples := receive(b, results, watchers, "every event")
	for _, got := range samples {
		if len(got) != want {
			b.Fatalf("a watcher received %d of %d events", len(got), want)
		}
		lat.add(got)
	}
	b.StopTimer()
	cpu(want)
	lat.report(b)
	clock.reportStored(b, samples, sent)
	return len(lat.d)
}

// watchLoop records the latency of each timed event and hands its samples
// to results once it has want of them, or when the watch ends early. It
// keeps draining, so the server never blocks on it.
func watchLoop(w watch.Interface, want int, synced chan<- struct{}, results chan<- []time.Duration) {
	var mine []time.Duration
	reported := false
	for ev := range w.ResultChan() {
		now := time.Now()
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			break // an ERROR event ends the watch
		}
		if p.Name == "sync" {
			synced <- struct{}{}
			continue
		}
		sent, err := strconv.ParseInt(p.Annotations[sentAnnotation], 10, 64)
		if err != nil || reported {
			continue
		}
		if mine = append(mine, now.Sub(time.Unix(0, sent))); len(mine) == want {
			results <- mine
			reported = true
		}
	}
	if !reported {
		results <- mine
	}
}

// receive takes n values from ch, failing after 30s without one.
func receive[T any](b *testing.B, ch <-chan T, n int, what string) []T {
	out := make([]T, 0, n)
	for range n {
		select {
		case v := <-ch:
			out = append(out, v)
		case <-time.After(30 * time.Second):
			b.Fatalf("%d of %d watchers received %s", len(out), n, what)
		}
	}
	return out
}

// BenchmarkDiskFsync measures the disk under b.TempDir(), where the bolt
// store lives: one op overwrites a 4 KiB page and syncs it. A bbolt commit
// syncs twice (data pages, then the meta page) with fdatasync, so the
// fastest serial commit takes about two fdatasync ops.
func BenchmarkDiskFsync(b *testing.B) {
	for _, name := range []string{"fdatasync", "fsync"} {
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "sync"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			page := bytes.Repeat([]byte{0xa5}, 4096)
			for b.Loop() {
				if _, err = f.WriteAt(page, 0); err == nil && name == "fsync" {
					err = f.Sync()
				} else if err == nil {
					err = syscall.Fdatasync(int(f.Fd()))
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/sync")
		})
	}
}
