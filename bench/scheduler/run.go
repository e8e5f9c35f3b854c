package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/internal/procstat"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

type config struct {
	Workload    string
	Nodes, Pods int
	Parallelism int
	// NoEvents drops the scheduler's events instead of writing them.
	NoEvents bool
	// MaxBindings bounds concurrent binds (0: the scheduler's default).
	MaxBindings int
	// WindowProfile, when set, is the file that receives a CPU profile of
	// the measured window only (first bind to last bind, the pods/s
	// window). It cannot be combined with a whole-program profile.
	WindowProfile string
	// WindowAllocProfile, when set, receives heap profiles at the first
	// bind (path + ".base") and the last (path): compare their
	// alloc_space with pprof -diff_base for the window's allocations.
	WindowAllocProfile string
	// EventsSettle is how long the event count must stay put after the
	// last bind before it is taken (0: one second; negative: not counted).
	EventsSettle time.Duration
}

type result struct {
	Workload         string        `json:"workload"`
	Nodes            int           `json:"nodes"`
	Pods             int           `json:"pods"`
	PodsPerSecond    float64       `json:"podsPerSecond"`
	P99AttemptMillis float64       `json:"p99AttemptMillis"`
	Elapsed          time.Duration `json:"elapsed"`
	// Attempts counts scheduling attempts by result.
	Attempts map[string]float64 `json:"attempts"`
	// CPUMicrosPerPod is the process's CPU time (user and system: API
	// server, scheduler, clients and GC together) from the scheduler's
	// start to the last bind, per pod. Other tenants of a shared machine
	// barely move it, unlike pods/s.
	CPUMicrosPerPod float64 `json:"cpuMicrosPerPod"`
	// BindCPUMicrosPerPod is the process's CPU time from the first bind
	// to the last, per pod: the window pods/s is measured over, without
	// the informers' initial lists.
	BindCPUMicrosPerPod float64 `json:"bindCpuMicrosPerPod"`
	// ScheduledEvents counts the Scheduled events stored once the event
	// writer went quiet after the last bind (-1: not counted).
	ScheduledEvents int `json:"scheduledEvents"`
}

// run measures one workload: setup (API server, nodes, pending pods) is not
// timed; the clock runs from the first pod bound to the last.
func run(ctx context.Context, cfg config) (*result, error) {
	podFn, ok := workloads[cfg.Workload]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q", cfg.Workload)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := memory.New()
	defer st.Close()
	srv, err := apiserver.New(apiserver.Config{Store: st, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if err := srv.Bootstrap(ctx); err != nil {
		return nil, err
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	rc := &rest.Config{Host: hs.URL, QPS: -1, Transport: benchTransport()}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}

	if err := parallel(ctx, cfg.Nodes, func(i int) error { return createNode(ctx, client, i) }); err != nil {
		return nil, fmt.Errorf("creating nodes: %w", err)
	}
	if err := parallel(ctx, cfg.Pods, func(i int) error {
		_, err := client.CoreV1().Pods("default").Create(ctx, podFn(i, cfg.Nodes), metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating pods: %w", err)
	}

	// Watch bindings.
	var first, last atomic.Int64
	var bound atomic.Int32
	var firstCPU atomic.Int64 // process CPU at the first bind
	done := make(chan struct{})
	// profiling receives, at the first bind, how to stop the window profile.
	type profileStart struct {
		stop func()
		err  error
	}
	profiling := make(chan profileStart, 1)
	factory := informers.NewSharedInformerFactory(client, 0)
	podInf := factory.Core().V1().Pods().Informer()
	if err := podInf.SetTransform(bindingView); err != nil {
		return nil, err
	}
	onPod := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			now := time.Now().UnixNano()
			if first.CompareAndSwap(0, now) {
				firstCPU.Store(int64(procstat.SelfCPU()))
				stop, err := startWindowProfile(cfg.WindowProfile)
				if err == nil {
					err = writeHeapProfile(cfg.WindowAllocProfile, ".base")
				}
				profiling <- profileStart{stop, err}
			}
			last.Store(now)
			if int(bound.Add(1)) == cfg.Pods {
				close(done)
			}
		}
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*corev1.Pod); ok && o.Spec.NodeName == "" {
				onPod(obj)
			}
		},
	}); err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	factory.Start(watchCtx.Done())
	factory.WaitForCacheSync(watchCtx.Done())

	reg := prometheus.NewRegistry()
	opts := []scheduler.Option{scheduler.WithLogger(quiet), scheduler.WithMetricsRegisterer(reg)}
	if cfg.Parallelism > 0 {
		opts = append(opts, scheduler.WithParallelism(cfg.Parallelism))
	}
	if cfg.MaxBindings > 0 {
		opts = append(opts, scheduler.WithMaxInFlightBindings(cfg.MaxBindings))
	}
	if cfg.NoEvents {
		opts = append(opts, scheduler.WithEventRecorders(func(string) record.EventRecorder { return &record.FakeRecorder{} }))
	}
	s, err := scheduler.New(scheduler.Config{Client: client, Profiles: []scheduler.Profile{plugins.DefaultProfile("")}}, opts...)
	if err != nil {
		return nil, err
	}
	cpuStart := procstat.SelfCPU()
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan error, 1)
	go func() { schedDone <- s.Run(schedCtx) }()
	var cpuUsed, bindCPU time.Duration
	var profErr error
	select {
	case <-done:
		end := procstat.SelfCPU()
		cpuUsed = end - cpuStart
		bindCPU = end - time.Duration(firstCPU.Load())
		p := <-profiling // sent before done was closed
		if p.stop != nil {
			p.stop()
		}
		profErr = errors.Join(p.err, writeHeapProfile(cfg.WindowAllocProfile, ""))
	case <-ctx.Done():
		stopSched()
		<-schedDone
		select {
		case p := <-profiling:
			if p.stop != nil {
				p.stop()
			}
		default:
		}
		return nil, fmt.Errorf("%d of %d pods bound: %w", bound.Load(), cfg.Pods, ctx.Err())
	}
	// After the window: let the event writer catch up, then count the
	// Scheduled events (one per pod is what the scheduler owes).
	scheduled, err := settledScheduledEvents(ctx, client, cfg.EventsSettle)
	stopSched()
	if err := errors.Join(<-schedDone, profErr, err); err != nil {
		return nil, err
	}
	elapsed := time.Duration(last.Load() - first.Load())
	p99, attempts, err := attemptStats(reg)
	if err != nil {
		return nil, err
	}
	res := &result{Workload: cfg.Workload, Nodes: cfg.Nodes, Pods: cfg.Pods, Elapsed: elapsed, P99AttemptMillis: p99 * 1000, Attempts: attempts,
		CPUMicrosPerPod:     float64(cpuUsed.Microseconds()) / float64(cfg.Pods),
		BindCPUMicrosPerPod: float64(bindCPU.Microseconds()) / float64(max(cfg.Pods-1, 1)),
		ScheduledEvents:     scheduled}
	if elapsed > 0 {
		res.PodsPerSecond = float64(cfg.Pods-1) / elapsed.Seconds()
	}
	return res, nil
}

// parallel runs fn for [0, n) on 16 goroutines.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs, ctx.Err())
}

func createNode(ctx context.Context, client kubernetes.Interface, i int) error {
	name := fmt.Sprintf("node-%05d", i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
	}}}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	n.Status.Capacity = n.Status.Allocatable
	created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if len(created.Status.Allocatable) == 0 { // the status is set through nodes/status
		created.Status = n.Status
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	}
	return err
}

// attemptStats estimates the 99th percentile of the attempt duration
// histogram, interpolating linearly within the bucket, and counts the
// attempts by result.
func attemptStats(reg *prometheus.Registry) (float64, map[string]float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, nil, err
	}
	attempts := map[string]float64{}
	type bucket struct{ le, count float64 }
	var buckets []bucket
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != "scheduler_scheduling_attempt_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					attempts[l.GetValue()] += float64(h.GetSampleCount())
				}
			}
			total += float64(h.GetSampleCount())
			for i, b := range h.GetBucket() {
				if i >= len(buckets) {
					buckets = append(buckets, bucket{le: b.GetUpperBound()})
				}
				buckets[i].count += float64(b.GetCumulativeCount())
			}
		}
	}
	if total == 0 {
		return 0, attempts, nil
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	rank := 0.99 * total
	prevLe, prevCount := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			if b.count == prevCount {
				return b.le, attempts, nil
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount), attempts, nil
		}
		prevLe, prevCount = b.le, b.count
	}
	return math.Inf(1), attempts, nil
}
