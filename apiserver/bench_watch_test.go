package apiserver_test

// BenchmarkWatchDelivery measures what the API server itself takes to
// deliver a watch event to 100 watchers, leaving out client-go's decoding:
// the watchers read the raw HTTP/1.1 watch stream, split it into frames and
// find the writer's timestamp with a byte scan. The watchers run either in
// the benchmark's process (sharing its Go runtime with the server) or in a
// child process (a re-exec of the test binary), which takes their reading
// out of the server's runtime, though not off the machine's two cores.
// BenchmarkWatchLatency (bench_test.go) is the client-go view: what a
// controller sees.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podkit/podkit/internal/procstat"
)

// watchChildEnv carries a watchChildConfig (JSON) to a re-executed test
// binary, which then runs the watchers instead of the tests.
const watchChildEnv = "PODKIT_BENCH_WATCH_CHILD"

// syncAnnotation marks the pod whose event tells a watcher that it is
// registered and the stream is flowing.
const syncAnnotation = "bench.podkit.io/sync"

var (
	sentKey = []byte(sentAnnotation)
	syncKey = []byte(syncAnnotation)
)

// watchChildConfig tells a child process what to watch.
type watchChildConfig struct {
	URL      string // server base URL
	Accept   string // media type of the stream
	RV       string // resourceVersion to start from
	Watchers int
	Want     int // timed events every watcher waits for
}

// BenchmarkWatchDelivery: raw HTTP watchers, in this process ("inproc")
// or in a child process ("subproc"); JSON and protobuf streams; 20 and 100
// writes per second. cpu-µs/op is this process's CPU per write (the
// server, the writer's client-go and, inproc, the watchers);
// watchers-cpu-µs/op the child's.
func BenchmarkWatchDelivery(b *testing.B) {
	for _, where := range []string{"inproc", "subproc"} {
		for _, enc := range []struct {
			name     string
			protobuf bool
			accept   string
		}{{"json", false, "application/json"}, {"protobuf", true, "application/vnd.kubernetes.protobuf"}} {
			for _, rate := range []int{20, 100} {
				b.Run(fmt.Sprintf("%s/%s/%dwps", where, enc.name, rate), func(b *testing.B) {
					benchWatchRaw(b, where == "subproc", enc.protobuf, enc.accept, rate)
				})
			}
		}
	}
}

func benchWatchRaw(b *testing.B, subproc, protobuf bool, accept string, rate int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := newStoreClock(openStore(b, "memory"))
	env := newBenchEnv(b, clock)
	pods := env.clientset(b, protobuf).CoreV1().Pods(benchNamespace)
	start, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := watchChildConfig{URL: env.url, Accept: accept, RV: start.ResourceVersion, Watchers: watchers, Want: b.N}
	var w watchGroup
	if subproc {
		w, err = startChildWatchers(b, cfg)
	} else {
		w, err = startRawWatchers(ctx, cfg)
	}
	if err != nil {
		b.Fatal(err)
	}
	sync := benchPod("sync", 0)
	sync.Annotations = map[string]string{syncAnnotation: "true"}
	if _, err := pods.Create(ctx, sync, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := w.synced(30 * time.Second); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	cpu := cpuMeter(b)
	writes, sent := writeTimed(b, ctx, pods, rate, b.N)
	samples, childCPU, err := w.results(30 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu(b.N)
	var lat latencies
	for _, got := range samples {
		if len(got) != b.N {
			b.Fatalf("a watcher received %d of %d events", len(got), b.N)
		}
		lat.add(got)
	}
	lat.report(b)
	clock.reportStored(b, samples, sent)
	b.ReportMetric(float64(len(lat.d))/b.Elapsed().Seconds(), "deliveries/s")
	slices.Sort(writes)
	b.ReportMetric(float64(writes[len(writes)/2])/1e6, "write-p50-ms")
	reportSpread(b, samples)
	if subproc {
		b.ReportMetric(float64(childCPU.Microseconds())/float64(b.N), "watchers-cpu-µs/op")
	}
	reportLoad(b)
}

// writeTimed issues n writes on a ticker of rate per second, alternately
// creating a pod and updating the last one, each carrying its send time,
// and returns how long each write took (request to response) and its send
// time (ns).
func writeTimed(b *testing.B, ctx context.Context, pods typedcorev1.PodInterface, rate, n int) ([]time.Duration, []int64) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var last *corev1.Pod
	var err error
	took := make([]time.Duration, 0, n)
	sentAt := make([]int64, 0, n)
	for i := range n {
		<-tick.C
		start := time.Now()
		sentAt = append(sentAt, start.UnixNano())
		sent := strconv.FormatInt(start.UnixNano(), 10)
		if i%2 == 0 {
			p := benchPod(fmt.Sprintf("ev-%06d", i), i)
			p.Annotations = map[string]string{sentAnnotation: sent}
			last, err = pods.Create(ctx, p, metav1.CreateOptions{})
		} else {
			last.Annotations[sentAnnotation] = sent
			last, err = pods.Update(ctx, last, metav1.UpdateOptions{})
		}
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	return took, sentAt
}

// reportSpread reports, over the events, the median latency of the first
// watcher to receive each event and the median and 99th percentile of the
// time between the first and the last watcher receiving it: the fan-out.
func reportSpread(b *testing.B, samples [][]time.Duration) {
	n := len(samples[0])
	first := make([]time.Duration, n)
	spread := make([]time.Duration, n)
	for i := range n {
		lo, hi := samples[0][i], samples[0][i]
		for _, s := range samples[1:] {
			lo, hi = min(lo, s[i]), max(hi, s[i])
		}
		first[i], spread[i] = lo, hi-lo
	}
	slices.Sort(first)
	slices.Sort(spread)
	at := func(d []time.Duration, p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / 1e6 }
	b.ReportMetric(at(first, 0.5), "first-p50-ms")
	b.ReportMetric(at(spread, 0.5), "fanout-p50-ms")
	b.ReportMetric(at(spread, 0.99), "fanout-p99-ms")
}

// reportLoad reports the 1-minute load average at the end of a run.
func reportLoad(b *testing.B) {
	l, err := procstat.ReadLoadAvg()
	if err != nil {
		return
	}
	if v, err := strconv.ParseFloat(l.One, 64); err == nil {
		b.ReportMetric(v, "load1")
	}
}

// watchGroup is a set of running watchers.
type watchGroup interface {
	// synced waits until every watcher has seen the sync pod.
	synced(timeout time.Duration) error
	// results waits for every watcher's samples; childCPU is the CPU time
	// of the process the watchers ran in when that is not this one.
	results(timeout time.Duration) (samples [][]time.Duration, childCPU time.Duration, err error)
}

// rawWatchers run in this process.
type rawWatchers struct {
	n    int
	sync chan struct{}
	done chan []time.Duration
}

// startRawWatchers opens cfg.Watchers raw watch streams; it returns once
// the server has registered all of them (response headers received).
func startRawWatchers(ctx context.Context, cfg watchChildConfig) (*rawWatchers, error) {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: cfg.Watchers}
	client := &http.Client{Transport: tr}
	q := url.Values{"watch": {"1"}, "resourceVersion": {cfg.RV}}
	u := cfg.URL + "/api/v1/namespaces/" + benchNamespace + "/pods?" + q.Encode()
	w := &rawWatchers{n: cfg.Watchers, sync: make(chan struct{}, cfg.Watchers), done: make(chan []time.Duration, cfg.Watchers)}
	for range cfg.Watchers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", cfg.Accept)
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("watch: HTTP %d", resp.StatusCode)
		}
		go func() {
			defer resp.Body.Close()
			w.done <- readRawStream(resp.Body, cfg.Accept != "application/json", cfg.Want, w.sync)
		}()
	}
	return w, nil
}

func (w *rawWatchers) synced(timeout time.Duration) error {
	_, err := collect(w.sync, w.n, timeout, "the sync pod")
	return err
}

func (w *rawWatchers) results(timeout time.Duration) ([][]time.Duration, time.Duration, error) {
	s, err := collect(w.done, w.n, timeout, "every event")
	return s, 0, err
}

// collect takes n values from ch, failing after timeout without one.
func collect[T any](ch <-chan T, n int, timeout time.Duration, what string) ([]T, error) {
	out := make([]T, 0, n)
	for range n {
		select {
		case v := <-ch:
			out = append(out, v)
		case <-time.After(timeout):
			return nil, fmt.Errorf("%d of %d watchers received %s", len(out), n, what)
		}
	}
	return out, nil
}

// readRawStream splits a watch stream into frames (JSON: one per line;
// protobuf: 4-byte big-endian length, then the frame) and records, for
// each frame carrying a send time, receive time minus send time. It
// signals sync on the sync pod's frame and returns after want samples or
// when the stream ends.
func readRawStream(body io.Reader, protobuf bool, want int, sync chan<- struct{}) []time.Duration {
	r := bufio.NewReaderSize(body, 64<<10)
	var (
		out   = make([]time.Duration, 0, want)
		frame []byte
		hdr   [4]byte
	)
	for len(out) < want {
		var err error
		if protobuf {
			if _, err = io.ReadFull(r, hdr[:]); err == nil {
				n := int(binary.BigEndian.Uint32(hdr[:]))
				if cap(frame) < n {
					frame = make([]byte, n)
				}
				frame = frame[:n]
				_, err = io.ReadFull(r, frame)
			}
		} else {
			frame, err = readLine(r, frame[:0])
		}
		if err != nil {
			return out
		}
		now := time.Now()
		sent, ok := sentTime(frame)
		switch {
		case ok:
			out = append(out, now.Sub(time.Unix(0, sent)))
		case bytes.Contains(frame, syncKey):
			sync <- struct{}{}
		}
	}
	return out
}

// readLine appends the next newline-terminated line of r to buf.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		line, err := r.ReadSlice('\n')
		buf = append(buf, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// sentTime finds the send-time annotation in an encoded pod: its key
// followed, within a few bytes of JSON or protobuf syntax, by the digits.
// The annotation comes before managedFields in both encodings, where the
// key appears again (as "f:<key>", without digits after it).
func sentTime(frame []byte) (int64, bool) {
	i := bytes.Index(frame, sentKey)
	if i < 0 {
		return 0, false
	}
	rest := frame[i+len(sentKey):]
	j := 0
	for j < len(rest) && j < 4 && (rest[j] < '0' || rest[j] > '9') {
		j++
	}
	var v int64
	k := j
	for ; k < len(rest) && rest[k] >= '0' && rest[k] <= '9'; k++ {
		v = v*10 + int64(rest[k]-'0')
	}
	return v, k > j
}
