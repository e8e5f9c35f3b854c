// Command sidecar-injector shows the seeds' Istio case done in process: a
// mutating admission plugin (Injector, an admission.Admitter) that adds a
// proxy container to every pod annotated sidecar.example.com/inject=true,
// plugged into the API server's admission chain of a podkit.Cluster
// through ClusterConfig.APIServer — no webhook, no TLS, no second process.
//
// The program starts a one-node cluster (real containers: run it as root)
// with the demo image in its embedded registry, creates an annotated pod
// whose only container serves HTTP on port 8080, and shows that the pod
// came back from the API server with a second container, "proxy", which
// really runs in the pod's network namespace (it answers on the pod's IP,
// port 15001). Then it deletes the pod and stops the cluster.
//
//	make build && sudo go run ./examples/sidecar-injector -web bin/demo-web
//
// With -keep the cluster keeps serving (kubeconfig in the data dir) until
// Ctrl-C, so `kubectl run` with the annotation shows the same.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/sandbox/native"
)

// demoImage is the name the demo program gets in the embedded registry.
const demoImage = "example/web:1"

// options configure run.
type options struct {
	DataDir     string
	WebBinary   string // static executable packed as the image
	InitBinary  string // podkit-init (optional)
	NodePrefix  string
	ClusterCIDR netip.Prefix
	Keep        bool // serve until ctx ends instead of stopping
	Out         io.Writer
	Logger      *slog.Logger
}

func main() {
	native.Init() // the runtime's supervisor and container init re-exec this binary
	o := options{Out: os.Stdout, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	flag.StringVar(&o.DataDir, "data-dir", filepath.Join(os.TempDir(), "podkit-sidecar-example"), "cluster state")
	flag.StringVar(&o.WebBinary, "web", "bin/demo-web", "static executable to pack as the demo image (make build writes bin/demo-web)")
	flag.StringVar(&o.InitBinary, "init", "", "podkit-init binary for containers (default: this program re-executed)")
	flag.StringVar(&o.NodePrefix, "node-prefix", "sidecar-example", "node name prefix")
	cidr := flag.String("cluster-cidr", "10.244.0.0/16", "pod address range")
	flag.BoolVar(&o.Keep, "keep", false, "keep serving until Ctrl-C")
	flag.Parse()
	var err error
	if o.ClusterCIDR, err = netip.ParsePrefix(*cidr); err != nil {
		fmt.Fprintln(os.Stderr, "sidecar-injector: --cluster-cidr:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "sidecar-injector:", err)
		os.Exit(1)
	}
}

// run starts the cluster with the injector, shows an injected pod, and
// stops the cluster, leaving the host clean.
func run(ctx context.Context, o options) (retErr error) {
	if _, err := os.Stat(o.WebBinary); err != nil {
		return fmt.Errorf("demo program: %w (run make build, or pass -web)", err)
	}
	inj := &Injector{Sidecar: corev1.Container{
		Name: "proxy", Args: []string{"serve", "-addr", ":15001"},
		Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}},
	}}
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{
		DataDir: o.DataDir, Port: -1, Store: app.StoreMemory, NodePrefix: o.NodePrefix, ClusterCIDR: o.ClusterCIDR,
		Kubeconfig: filepath.Join(o.DataDir, "kubeconfig"),
		DemoImages: map[string]string{demoImage: o.WebBinary},
		APIServer:  WithInjector(inj),
		Node:       func(_ int, nc *podkit.NodeConfig) { nc.InitBinary = o.InitBinary },
		Logger:     o.Logger, ShutdownGrace: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	// The registry's address is known once the cluster exists; nothing is
	// admitted before Run, so setting the image here is safe.
	inj.Sidecar.Image = c.Image(demoImage)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && retErr == nil {
			retErr = err
		}
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer scancel()
		if err := c.Shutdown(sctx); err != nil && retErr == nil {
			retErr = err
		}
	}()
	if err := podkit.WaitNodesReady(ctx, c.Client(), 1, 2*time.Minute); err != nil {
		return err
	}
	pods := c.Client().CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{InjectAnnotation: "true"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
			Name: "web", Image: c.Image(demoImage), Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod: %w", err)
	}
	fmt.Fprintf(o.Out, "created pod %s with containers %v (%s=%s)\n", pod.Name, containerNames(pod), StatusAnnotation, pod.Annotations[StatusAnnotation])
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err = pods.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning && len(pod.Status.ContainerStatuses) == 2 &&
			pod.Status.ContainerStatuses[0].Ready && pod.Status.ContainerStatuses[1].Ready, nil
	}); err != nil {
		return fmt.Errorf("pod web not running with its sidecar: %w", err)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		fmt.Fprintf(o.Out, "container %s running=%t\n", cs.Name, cs.State.Running != nil)
	}
	reply, err := httpGet(ctx, net.JoinHostPort(pod.Status.PodIP, "15001"))
	if err != nil {
		return fmt.Errorf("the sidecar does not answer on the pod's IP: %w", err)
	}
	fmt.Fprintf(o.Out, "sidecar on %s:15001 answers: %s", pod.Status.PodIP, reply)
	if o.Keep {
		fmt.Fprintf(o.Out, "serving; kubectl --kubeconfig %s get pods (Ctrl-C stops)\n", filepath.Join(o.DataDir, "kubeconfig"))
		<-ctx.Done()
	}
	if err := pods.Delete(context.WithoutCancel(ctx), "web", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete pod: %w", err)
	}
	return nil
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// httpGet fetches / from addr and returns the first line of the body.
func httpGet(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.0\r\n\r\n")
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	_, body, _ := strings.Cut(string(b), "\r\n\r\n")
	line, _, _ := strings.Cut(body, "\n")
	return line + "\n", nil
}
