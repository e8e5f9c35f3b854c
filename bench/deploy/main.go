// Command deploy measures issue 9's Deployment benchmark: the time from
// `kubectl create deploy NAME --image=IMG --replicas=N` (the real kubectl,
// timed from its start) to the Deployment reporting N available replicas,
// observed through a watch.
//
//   - real: a one-node podkit.Cluster with real containers (the demo web
//     server; run as root), N=100 by default;
//   - sim: the simulated cluster of examples/simulated-cluster (the same
//     API server, controllers and scheduler, real kubelets on the fake
//     runtime), 100 nodes and N=10,000 by default.
//
// Besides wall-clock time it prints the CPU time (user+sys) of this
// process, which hosts the whole control plane and the kubelets, and the
// load average, since the machine is shared. Containers run under the
// runtime's supervisor, a separate process whose CPU is not included.
//
//	sudo go run ./bench/deploy -mode real
//	go run ./bench/deploy -mode sim
//	go run ./bench/deploy -mode sim -nodes 1000 -replicas 10000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/examples/simulated-cluster/sim"
	"github.com/podkit/podkit/internal/procstat"
	"github.com/podkit/podkit/sandbox/native"
)

func main() {
	native.Init() // real mode: the runtime's supervisor and container init re-exec this binary
	mode := flag.String("mode", "real", "real (one node, real containers) or sim (fake runtime)")
	replicas := flag.Int("replicas", 0, "replicas (default 100 real, 10000 sim)")
	nodes := flag.Int("nodes", 100, "sim: simulated nodes")
	runs := flag.Int("runs", 1, "repetitions (a fresh Deployment each; the image stays cached)")
	kubectl := flag.String("kubectl", "kubectl", "the kubectl binary")
	timeout := flag.Duration("timeout", 10*time.Minute, "limit per run")
	probe := probe{print: true}
	flag.StringVar(&probe.cpuprofile, "cpuprofile", "", "write a CPU profile of the (last) measured run to this file")
	flag.StringVar(&probe.memprofile, "memprofile", "", "write a heap profile (alloc_space: what the run allocated) after the (last) measured run")
	flag.BoolVar(&probe.requests, "requests", true, "print the API server's requests and watch events per pod during each run")
	flag.Parse()
	ctx := context.Background()
	var err error
	switch *mode {
	case "real":
		err = runReal(ctx, *kubectl, or(*replicas, 100), *runs, *timeout, probe)
	case "sim":
		err = runSim(ctx, *kubectl, *nodes, or(*replicas, 10000), *runs, *timeout, probe)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}

func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// runReal measures on a one-node cluster with real containers.
func runReal(ctx context.Context, kubectl string, replicas, runs int, timeout time.Duration, p probe) (retErr error) {
	dir, err := os.MkdirTemp("", "bench-deploy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	web, init := filepath.Join(dir, "demo-web"), filepath.Join(dir, "podkit-init")
	for out, pkg := range map[string]string{web: "./examples/demo-web", init: "./sandbox/cmd/podkit-init"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", pkg, err, b)
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{
		DataDir: filepath.Join(dir, "cluster"), Port: -1, Store: app.StoreMemory, Kubeconfig: kubeconfig,
		NodePrefix: fmt.Sprintf("bench-deploy-%d", os.Getpid()%100000), ClusterCIDR: mustPrefix("10.239.0.0/16"),
		DemoImages: map[string]string{"bench/web:1": web},
		Node: func(_ int, nc *podkit.NodeConfig) {
			nc.InitBinary = init
		},
		Logger: slog.New(slog.DiscardHandler), ShutdownGrace: time.Second,
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		retErr = errors.Join(retErr, <-done)
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer scancel()
		retErr = errors.Join(retErr, c.Shutdown(sctx))
	}()
	if err := podkit.WaitNodesReady(ctx, c.Client(), 1, 2*time.Minute); err != nil {
		return err
	}
	// Warm the image cache, as issue 7's pod startup SLI does.
	if _, err := measure(ctx, c.Client(), kubectl, kubeconfig, "warm", c.Image("bench/web:1"), 1, timeout, probe{}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	fmt.Printf("real containers, 1 node, %d replicas (image cached)\n", replicas)
	for i := range runs {
		if _, err := measure(ctx, c.Client(), kubectl, kubeconfig, fmt.Sprintf("web%d", i), c.Image("bench/web:1"), replicas, timeout, p); err != nil {
			return err
		}
	}
	return nil
}

// runSim measures on the simulated cluster.
func runSim(ctx context.Context, kubectl string, nodes, replicas, runs int, timeout time.Duration, p probe) error {
	dir, err := os.MkdirTemp("", "bench-deploy-sim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	perNode := max(110, 2*replicas/max(nodes, 1))
	c, err := sim.Start(ctx, sim.Config{Nodes: nodes, MaxPods: perNode, Kubeconfig: kubeconfig})
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := c.WaitNodesReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	fmt.Printf("fake runtime, %d nodes, %d replicas\n", nodes, replicas)
	for i := range runs {
		if _, err := measure(ctx, c.Client(), kubectl, kubeconfig, fmt.Sprintf("sim%d", i), "sim/app:1", replicas, timeout, p); err != nil {
			return err
		}
	}
	return nil
}

// probe is what measure records besides time: a CPU profile and the API
// server's request counts.
type probe struct {
	cpuprofile string
	memprofile string
	requests   bool
	print      bool // print the result
}

// result of one measurement.
type result struct {
	replicas   int
	kubectl    time.Duration // kubectl create returned
	created    time.Duration // the ReplicaSet has created every pod
	rsReady    time.Duration // the ReplicaSet counts every pod available
	available  time.Duration
	cpu        time.Duration
	allocated  uint64 // bytes the process allocated during the run
	gcs        uint32 // garbage collections during the run
	loadBefore string
	loadAfter  string
}

func (r result) String() string {
	return fmt.Sprintf("replicas %d: kubectl returned %s, all pods created %s, ReplicaSet available %s, %d available %s; cpu (user+sys, this process) %s; allocated %d MB in %d GCs; load %s → %s",
		r.replicas, r.kubectl.Round(time.Millisecond), r.created.Round(time.Millisecond), r.rsReady.Round(time.Millisecond), r.replicas,
		r.available.Round(time.Millisecond), r.cpu.Round(time.Millisecond), r.allocated>>20, r.gcs, r.loadBefore, r.loadAfter)
}

// measure runs kubectl create deploy and waits for every replica to be
// available (printing the result when p.print), then deletes the
// Deployment and waits for its pods to go.
func measure(ctx context.Context, cl kubernetes.Interface, kubectl, kubeconfig, name, image string, replicas int, timeout time.Duration, p probe) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := result{replicas: replicas, loadBefore: loadAverage()}
	w, err := cl.AppsV1().Deployments("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return r, err
	}
	defer w.Stop()
	rsw, err := cl.AppsV1().ReplicaSets("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return r, err
	}
	defer rsw.Stop()
	var before counters
	if p.requests {
		if before, err = scrapeCounters(ctx, cl); err != nil {
			return r, err
		}
	}
	stopProfile, err := startCPUProfile(p.cpuprofile)
	if err != nil {
		return r, err
	}
	defer stopProfile()
	var mem0 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	cpu0 := procstat.SelfCPU()
	start := time.Now()
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "create", "deploy", name, "--image="+image, "--replicas="+strconv.Itoa(replicas))
	if out, err := cmd.CombinedOutput(); err != nil {
		return r, fmt.Errorf("kubectl create deploy: %v\n%s", err, out)
	}
	r.kubectl = time.Since(start)
	for r.available == 0 || r.created == 0 || r.rsReady == 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return r, errors.New("deployment watch ended")
			}
			if d, isD := ev.Object.(*appsv1.Deployment); isD && d.Status.AvailableReplicas == int32(replicas) && r.available == 0 {
				r.available = time.Since(start)
			}
		case ev, ok := <-rsw.ResultChan():
			if !ok {
				return r, errors.New("replicaset watch ended")
			}
			if rs, isRS := ev.Object.(*appsv1.ReplicaSet); isRS && rs.Status.Replicas == int32(replicas) && r.created == 0 {
				r.created = time.Since(start)
			}
			if rs, isRS := ev.Object.(*appsv1.ReplicaSet); isRS && rs.Status.AvailableReplicas == int32(replicas) && r.rsReady == 0 {
				r.rsReady = time.Since(start)
			}
		case <-ctx.Done():
			st := "unknown"
			if d, err := cl.AppsV1().Deployments("default").Get(context.WithoutCancel(ctx), name, metav1.GetOptions{}); err == nil {
				st = fmt.Sprintf("%+v", d.Status)
			}
			return r, fmt.Errorf("%d replicas not available within %s (status %s): %w", replicas, timeout, st, ctx.Err())
		}
	}
	r.cpu = procstat.SelfCPU() - cpu0
	var mem1 runtime.MemStats
	runtime.ReadMemStats(&mem1)
	r.allocated, r.gcs = mem1.TotalAlloc-mem0.TotalAlloc, mem1.NumGC-mem0.NumGC
	r.loadAfter = loadAverage()
	stopProfile()
	if p.print {
		fmt.Println(r) // now: deleting the pods may take long
	}
	if err := writeHeapProfile(p.memprofile); err != nil {
		return r, err
	}
	if p.requests {
		after, err := scrapeCounters(ctx, cl)
		if err != nil {
			return r, err
		}
		printDelta(os.Stdout, before, after, replicas)
		if err := printEvents(ctx, cl, os.Stdout, replicas); err != nil {
			return r, err
		}
	}
	if err := cl.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return r, err
	}
	for {
		pods, err := cl.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err == nil && len(pods.Items) == 0 {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("pods of %s not deleted: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func loadAverage() string {
	l, err := procstat.ReadLoadAvg()
	if err != nil {
		return "unknown"
	}
	return l.String()
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
