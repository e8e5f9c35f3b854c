// Command embedded-cluster embeds a whole one-node podkit cluster — API
// server, controllers, scheduler, kubelet with the native runtime — in a Go
// program, the way envtest embeds an API server in tests, except that pods
// really run: it runs one pod to completion and prints its logs.
//
// The interesting part is main_test.go: startCluster is the envtest-style
// helper a project would copy into its own tests (a cluster per test, torn
// down with t.Cleanup, the host left clean), and TestPodOutput uses it.
//
//	make build && sudo go run ./examples/embedded-cluster -web bin/demo-web
//
// Run it as root: pods get namespaces, cgroups, overlay mounts and a veth
// on the node's bridge.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/sandbox/native"
)

// demoImage is the name the demo program gets in the embedded registry.
const demoImage = "example/web:1"

func main() {
	native.Init() // the runtime's supervisor and container init re-exec this binary
	dataDir := flag.String("data-dir", filepath.Join(os.TempDir(), "podkit-embedded-example"), "cluster state")
	web := flag.String("web", "bin/demo-web", "static executable packed as the demo image (make build writes bin/demo-web)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := os.Stat(*web); err != nil {
		fmt.Fprintf(os.Stderr, "embedded-cluster: demo program: %v (run make build, or pass -web)\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := clusterConfig(*dataDir, *web, "embedded", netip.MustParsePrefix("10.244.0.0/16"), log)
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embedded-cluster:", err)
		os.Exit(1)
	}
}

// clusterConfig is the one-node cluster of the example: in-memory store,
// a free API port, the demo image in the embedded registry.
func clusterConfig(dataDir, web, nodePrefix string, cidr netip.Prefix, log *slog.Logger) podkit.ClusterConfig {
	return podkit.ClusterConfig{
		DataDir: dataDir, Port: -1, Store: app.StoreMemory, NodePrefix: nodePrefix, ClusterCIDR: cidr,
		DemoImages: map[string]string{demoImage: web}, Logger: log, ShutdownGrace: 5 * time.Second,
	}
}

// run starts the cluster, runs one pod to completion, prints its logs and
// stops the cluster, leaving the host clean.
func run(ctx context.Context, cfg podkit.ClusterConfig, out io.Writer) (retErr error) {
	c, err := podkit.NewCluster(ctx, cfg)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		retErr = errors.Join(retErr, <-done)
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer scancel()
		retErr = errors.Join(retErr, c.Shutdown(sctx))
	}()
	if err := podkit.WaitNodesReady(ctx, c.Client(), 1, 2*time.Minute); err != nil {
		return err
	}
	logs, err := runPod(ctx, c.Client(), "hello", c.Image(demoImage), "init", "/tmp/greeting", "hello from an embedded cluster")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pod hello succeeded; its logs:\n%s", logs)
	return nil
}

// runPod runs a pod with one container (image, args) to completion in the
// default namespace and returns what it printed. It deletes the pod.
func runPod(ctx context.Context, client kubernetes.Interface, name, image string, args ...string) (string, error) {
	pods := client.CoreV1().Pods("default")
	_, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "main", Image: image, Args: args}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create pod %s: %w", name, err)
	}
	defer pods.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	var phase corev1.PodPhase
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	}); err != nil {
		return "", fmt.Errorf("pod %s did not finish (phase %q): %w", name, phase, err)
	}
	// The logs come from the node's kubelet through the API server, as
	// `kubectl logs` gets them.
	b, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of pod %s: %w", name, err)
	}
	if phase != corev1.PodSucceeded {
		return string(b), fmt.Errorf("pod %s failed; logs:\n%s", name, b)
	}
	return string(b), nil
}
