// Command simulated-cluster runs a 1,000-node cluster in one process and
// schedules 10,000 pods on it: the API server, controllers and scheduler of
// podkit.Cluster and a thousand real kubelets whose runtime is the
// in-memory sandbox/fake (package sim composes them). Each pod goes
// through admission, storage, the scheduler's queue, filters and scorers,
// the binding, its node's kubelet (pod worker, fake sandbox and container,
// status patch) and ends Running with an IP from its node's PodCIDR; only
// the kernel work is simulated. No root needed.
//
//	go run ./examples/simulated-cluster                     # 1,000 nodes, 10,000 pods
//	go run ./examples/simulated-cluster -nodes 100 -pods 1000
//
// It reports when the last pod was created, bound and Running, the CPU
// time (user+sys) the whole process spent, its peak RSS and the load
// average, since the machine it runs on is rarely idle.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/podkit/podkit/examples/simulated-cluster/sim"
)

// options size a run.
type options struct {
	Nodes, Pods int
	// Creators is how many clients create pods at once.
	Creators int
	Timeout  time.Duration
}

// result is what a run measured; durations count from the first create.
type result struct {
	Nodes, Pods              int
	Created, Bound, Running  time.Duration
	NodesReady               time.Duration // start → every node Ready
	CPU                      time.Duration // user+sys of the process over the pods' phase
	PeakRSSMiB               int64
	Load1                    string
	PodsOnBusiestNode, Empty int
}

func main() {
	var o options
	flag.IntVar(&o.Nodes, "nodes", 1000, "simulated nodes")
	flag.IntVar(&o.Pods, "pods", 10000, "pods to schedule and run")
	flag.IntVar(&o.Creators, "creators", 16, "concurrent pod creations")
	flag.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "limit for the whole run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := simulate(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "simulated-cluster:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
}

func (r result) print(w io.Writer) {
	fmt.Fprintf(w, "%d nodes Ready in %s\n", r.Nodes, r.NodesReady.Round(time.Millisecond))
	fmt.Fprintf(w, "%d pods: created %s, all bound %s, all Running %s after the first create\n",
		r.Pods, r.Created.Round(time.Millisecond), r.Bound.Round(time.Millisecond), r.Running.Round(time.Millisecond))
	fmt.Fprintf(w, "cpu (user+sys) %s, peak RSS %d MiB, load average %s\n", r.CPU.Round(time.Millisecond), r.PeakRSSMiB, r.Load1)
	fmt.Fprintf(w, "spread: busiest node runs %d pods, %d nodes run none\n", r.PodsOnBusiestNode, r.Empty)
}

// simulate starts the cluster, creates the pods, waits until every one
// is Running, and stops the cluster.
func simulate(ctx context.Context, o options) (r result, retErr error) {
	if o.Creators <= 0 {
		o.Creators = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r.Nodes, r.Pods = o.Nodes, o.Pods
	start := time.Now()
	c, err := sim.Start(ctx, sim.Config{Nodes: o.Nodes, MaxPods: max(110, 2*o.Pods/max(o.Nodes, 1))})
	if err != nil {
		return r, err
	}
	defer func() {
		if err := c.Stop(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	cl := c.Client()
	if err := c.WaitNodesReady(ctx, o.Timeout); err != nil {
		return r, err
	}
	r.NodesReady = time.Since(start)

	// A RetryWatcher, not a bare Watch: the API server closes a watch whose
	// reader falls too far behind (as Kubernetes' watch cache does), and a
	// client resumes from the last revision it saw.
	list, err := cl.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=sim", Limit: 1})
	if err != nil {
		return r, err
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = "app=sim"
			return cl.CoreV1().Pods("default").Watch(ctx, opts)
		},
	})
	if err != nil {
		return r, err
	}
	defer w.Stop()
	cpu0 := cpuTime()
	first := time.Now()
	created := make(chan error, 1)
	go func() { created <- createPods(ctx, cl, o) }()
	bound, running := map[string]string{}, map[string]bool{}
	for len(running) < o.Pods {
		select {
		case err := <-created:
			if err != nil {
				return r, err
			}
			r.Created = time.Since(first)
			created = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return r, fmt.Errorf("pod watch ended with %d of %d Running", len(running), o.Pods)
			}
			if ev.Type == watch.Error {
				return r, fmt.Errorf("pod watch: %w", apierrors.FromObject(ev.Object))
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			if p.Spec.NodeName != "" {
				if _, seen := bound[p.Name]; !seen {
					bound[p.Name] = p.Spec.NodeName
					if len(bound) == o.Pods {
						r.Bound = time.Since(first)
					}
				}
			}
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				running[p.Name] = true
			}
		case <-ctx.Done():
			return r, fmt.Errorf("%d of %d pods bound, %d Running: %w", len(bound), o.Pods, len(running), ctx.Err())
		}
	}
	r.Running = time.Since(first)
	if created != nil {
		if err := <-created; err != nil {
			return r, err
		}
		r.Created = r.Running
	}
	r.CPU = cpuTime() - cpu0
	r.PeakRSSMiB = peakRSSMiB()
	r.Load1 = loadAverage()
	perNode := map[string]int{}
	for _, n := range bound {
		perNode[n]++
	}
	for _, n := range c.NodeNames() {
		r.PodsOnBusiestNode = max(r.PodsOnBusiestNode, perNode[n])
		if perNode[n] == 0 {
			r.Empty++
		}
	}
	return r, nil
}

// createPods creates o.Pods pods with o.Creators clients at once.
func createPods(ctx context.Context, cl kubernetes.Interface, o options) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.Creators)
	for range o.Creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(o.Pods); i = next.Add(1) {
				if _, err := cl.CoreV1().Pods("default").Create(ctx, simPod(fmt.Sprintf("sim-%05d", i)), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create pod %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// simPod is a pod the fake runtime runs until it is stopped ("sleep inf"
// in the test program's vocabulary), with requests the scheduler weighs.
func simPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "sim"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "sim/app:1", Args: []string{"sleep", "inf"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}}},
	}
}

// cpuTime is the user+sys time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMiB is this process's peak resident set (VmHWM).
func peakRSSMiB() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss / 1024
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
