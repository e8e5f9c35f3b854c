// Command custom-networker runs a kubelet whose pods are networked by a
// Networker of its own instead of podkit's bridge: PTP, a routed
// point-to-point network in the style of Calico. Each pod gets a veth pair
// and a /32 from its node's PodCIDR; the pod routes everything via the
// link-local 169.254.1.1 (a permanent neighbour entry points it at the
// host end), and the host routes each pod's /32 to its veth. There is no
// bridge and no address spent on a gateway.
//
// The networker plugs in through podkit.NodeConfig.Network (here via
// ClusterConfig.Node); the native runtime calls it when it creates each
// pod's network namespace, step 13 of the birth sequence. The program
// starts a one-node cluster with it (real containers: run it as root),
// runs the demo web server, shows how the host routes the pod's address
// and fetches a page from the pod, then stops the cluster.
//
//	make build && sudo go run ./examples/custom-networker -web bin/demo-web
package main

import (
	"context"
	"errors"
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

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	WebBinary   string
	NodePrefix  string
	ClusterCIDR netip.Prefix // the node's PodCIDR is its first /24
	Out         io.Writer
	Logger      *slog.Logger
}

func main() {
	native.Init() // the runtime's supervisor and container init re-exec this binary
	o := options{Out: os.Stdout, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	flag.StringVar(&o.DataDir, "data-dir", filepath.Join(os.TempDir(), "podkit-ptp-example"), "cluster state")
	flag.StringVar(&o.WebBinary, "web", "bin/demo-web", "static executable packed as the demo image (make build writes bin/demo-web)")
	flag.StringVar(&o.NodePrefix, "node-prefix", "ptp-example", "node name prefix")
	cidr := flag.String("cluster-cidr", "10.244.0.0/16", "pod address range")
	flag.Parse()
	var err error
	if o.ClusterCIDR, err = netip.ParsePrefix(*cidr); err != nil {
		fmt.Fprintln(os.Stderr, "custom-networker: --cluster-cidr:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "custom-networker:", err)
		os.Exit(1)
	}
}

// run starts the cluster with PTP on its node, runs a web pod, shows its
// route and reply, and stops everything.
func run(ctx context.Context, o options) (retErr error) {
	if _, err := os.Stat(o.WebBinary); err != nil {
		return fmt.Errorf("demo program: %w (run make build, or pass -web)", err)
	}
	podCIDR := netip.PrefixFrom(o.ClusterCIDR.Masked().Addr(), 24)
	var nodeErr error
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{
		DataDir: o.DataDir, Port: -1, Store: app.StoreMemory, NodePrefix: o.NodePrefix, ClusterCIDR: o.ClusterCIDR,
		DemoImages: map[string]string{demoImage: o.WebBinary}, Logger: o.Logger, ShutdownGrace: 5 * time.Second,
		Node: func(_ int, nc *podkit.NodeConfig) {
			// The node's own PodCIDR, so the networker can be built now;
			// node IPAM records it instead of assigning another.
			nc.PodCIDR = podCIDR
			nc.Network, nodeErr = NewPTP(PTPConfig{PodCIDR: podCIDR, StateDir: filepath.Join(nc.DataDir, "ptp"), Forward: true})
		},
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
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer scancel()
		retErr = errors.Join(retErr, c.Shutdown(sctx))
	}()
	if nodeErr != nil {
		return nodeErr
	}
	if err := podkit.WaitNodesReady(ctx, c.Client(), 1, 2*time.Minute); err != nil {
		return err
	}
	pods := c.Client().CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
			Name: "web", Image: c.Image(demoImage),
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod: %w", err)
	}
	var pod *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err = pods.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && pod.Status.PodIP != "" && podReady(pod), nil
	}); err != nil {
		return fmt.Errorf("pod web not ready: %w", err)
	}
	ip := net.ParseIP(pod.Status.PodIP)
	routes, err := netlink.RouteGet(ip)
	if err != nil || len(routes) == 0 {
		return fmt.Errorf("no host route to pod %s: %v", ip, err)
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "pod web has IP %s (node PodCIDR %s); the host routes it via %s\n", ip, podCIDR, link.Attrs().Name)
	reply, err := httpGet(ctx, net.JoinHostPort(pod.Status.PodIP, "8080"))
	if err != nil {
		return fmt.Errorf("GET from the pod: %w", err)
	}
	fmt.Fprintf(o.Out, "the pod answers: %s", reply)
	return pods.Delete(context.WithoutCancel(ctx), "web", metav1.DeleteOptions{})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// httpGet fetches / from addr and returns the first line of the body.
func httpGet(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
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
