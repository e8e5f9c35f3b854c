// Command podstart measures end-to-end pod startup on a real one-node
// podkit cluster (issue 7's benchmark): the time from a pod's creation to
// Running observed through a watch (the Kubernetes pod-startup SLI, image
// cached), for N sequential pods and for a burst of N pods, plus the memory
// of the node (this process, which hosts the kubelet and the control plane,
// and the runtime's supervisor) with the pods running. Run it as root:
//
//	go run ./bench/podstart -n 100
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/sandbox/native"
)

var waitFor = new(time.Duration)

func main() {
	native.Init()
	n := flag.Int("n", 100, "pods per phase")
	flag.DurationVar(waitFor, "timeout", 5*time.Minute, "how long to wait for pods")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "podstart:", err)
		os.Exit(1)
	}
}

func run(n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "podstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "testbox")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/testbox").CombinedOutput(); err != nil {
		return fmt.Errorf("build testbox: %v\n%s", err, out)
	}
	init := filepath.Join(dir, "podkit-init")
	if out, err := exec.Command("go", "build", "-o", init, "./sandbox/cmd/podkit-init").CombinedOutput(); err != nil {
		return fmt.Errorf("build podkit-init: %v\n%s", err, out)
	}
	prefix := fmt.Sprintf("bench-%d", os.Getpid()%100000)
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{
		DataDir: filepath.Join(dir, "cluster"), Port: -1, NodePrefix: prefix, Store: "memory",
		DemoImages:    map[string]string{"bench/testbox:1": bin},
		Node:          func(i int, nc *podkit.NodeConfig) { nc.InitBinary = init },
		Logger:        slog.New(slog.DiscardHandler),
		ShutdownGrace: time.Second,
	})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer scancel()
		if err := c.Shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "shutdown:", err)
		}
	}()
	if err := podkit.WaitNodesReady(ctx, c.Client(), 1, time.Minute); err != nil {
		return err
	}
	img := c.Image("bench/testbox:1")
	cl := c.Client()
	// Warm the image cache: the SLI excludes pulls.
	if _, err := startPods(ctx, cl, img, "warm", 1, false); err != nil {
		return err
	}
	seq, err := startPods(ctx, cl, img, "seq", n, false)
	if err != nil {
		return err
	}
	// Make room: maxPods (110) counts the sequential pods.
	if err := deleteAll(ctx, cl, "seq", n); err != nil {
		return err
	}
	burstStart := time.Now()
	burst, err := startPods(ctx, cl, img, "burst", n, true)
	if err != nil {
		return err
	}
	burstAll := time.Since(burstStart)
	rss := rssKiB(os.Getpid())
	sup := supervisorRSS(c)
	fmt.Printf("| phase | pods | p50 | p99 | max |\n|---|---|---|---|---|\n")
	for _, p := range []struct {
		name string
		d    []time.Duration
	}{{"sequential", seq}, {"burst", burst}} {
		fmt.Printf("| %s | %d | %s | %s | %s |\n", p.name, len(p.d), pct(p.d, 50), pct(p.d, 99), pct(p.d, 100))
	}
	fmt.Printf("\nburst of %d: all Running %s after the first create\n", n, burstAll.Round(time.Millisecond))
	fmt.Printf("memory with %d pods running: this process (API server, controllers, scheduler, kubelet, runtime client) RSS %d MiB; supervisor RSS %d MiB\n",
		n+1, rss/1024, sup/1024)
	return nil
}

// startPods creates count pods (all at once when burst, else one after the
// other) and returns each pod's creation → Running latency as observed by a
// watch.
func startPods(ctx context.Context, cl kubernetes.Interface, img, prefix string, count int, burst bool) ([]time.Duration, error) {
	w, err := cl.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	created := map[string]time.Time{}
	var out []time.Duration
	create := func(i int) error {
		name := fmt.Sprintf("%s-%d", prefix, i)
		created[name] = time.Now()
		_, err := cl.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
				Name: "c", Image: img, Args: []string{"sleep", "inf"}, ImagePullPolicy: corev1.PullIfNotPresent}}},
		}, metav1.CreateOptions{})
		return err
	}
	wait := func(want int) error {
		timeout := time.After(*waitFor)
		for len(out) < want {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return fmt.Errorf("watch closed")
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type == watch.Deleted || !strings.HasPrefix(p.Name, prefix+"-") {
					continue
				}
				if t, ok := created[p.Name]; ok && p.Status.Phase == corev1.PodRunning {
					out = append(out, time.Since(t))
					delete(created, p.Name)
				}
			case <-timeout:
				for name := range created {
					if p, err := cl.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
						fmt.Fprintf(os.Stderr, "%s: node=%q phase=%s conditions=%v statuses=%v\n", name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
					}
				}
				return fmt.Errorf("%d of %d pods Running after %s", len(out), want, *waitFor)
			}
		}
		return nil
	}
	if burst {
		for i := 0; i < count; i++ {
			if err := create(i); err != nil {
				return nil, err
			}
		}
		return out, wait(count)
	}
	for i := 0; i < count; i++ {
		if err := create(i); err != nil {
			return nil, err
		}
		if err := wait(i + 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(100 * time.Microsecond)
}

func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var v int
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "VmRSS:"), "kB")), &v)
			return v
		}
	}
	return 0
}

func supervisorRSS(c *podkit.Cluster) int {
	b, err := os.ReadFile(filepath.Join("/run/podkit", c.NodeName(1), "supervisor.pid"))
	if err != nil {
		return 0
	}
	var pid int
	fmt.Sscan(strings.TrimSpace(string(b)), &pid)
	return rssKiB(pid)
}

// deleteAll deletes prefix-0..n-1 and waits until they are gone.
func deleteAll(ctx context.Context, cl kubernetes.Interface, prefix string, n int) error {
	zero := int64(0)
	for i := 0; i < n; i++ {
		if err := cl.CoreV1().Pods("default").Delete(ctx, fmt.Sprintf("%s-%d", prefix, i), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(*waitFor)
	for time.Now().Before(deadline) {
		l, err := cl.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		left := 0
		for _, p := range l.Items {
			if strings.HasPrefix(p.Name, prefix+"-") {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s pods not gone after %s", prefix, *waitFor)
}
