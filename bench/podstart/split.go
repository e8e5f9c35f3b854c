package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	dto "github.com/prometheus/client_model/go"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllers"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// clusterCIDR is the split mode's pod range (one node gets a /24 of it).
var clusterCIDR = netip.MustParsePrefix("10.244.0.0/16")

// startSplit runs the control plane (API server on loopback TCP,
// controllers, scheduler, registry) in this process and the node in a
// process of its own, so the node's memory and CPU are measured alone: this
// program re-executed as a node harness (podkit.StartNode + Run, what
// `podkit kubelet` runs, plus a /metrics endpoint), or with cli the real
// `podkit kubelet` (no metrics).
func startSplit(ctx context.Context, dir string, bins binaries, log *slog.Logger, cli, profile, runTmpfs bool, harnessArgs []string) (_ *node, retErr error) {
	ctx, cancel := context.WithCancel(ctx)
	var cleanups []func()
	cleanup := func() {
		cancel()
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	defer func() {
		if retErr != nil {
			cleanup()
		}
	}()
	unguard, err := guardRoute(clusterCIDR)
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, unguard)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	api, err := app.New(ctx, app.Options{DataDir: filepath.Join(dir, "apiserver"), Store: app.StoreMemory,
		BindAddress: "127.0.0.1", Port: 0, KubeconfigPath: kubeconfig, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("API server: %w", err)
	}
	// In-process components act as themselves (as in podkit.Cluster); the
	// node process and this benchmark use the admin kubeconfig over TLS.
	rc := inproc.RESTConfigAs(api.Server.Handler(), inproc.ControllerManagerIdentity())
	cmClient, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	schedClient, err := kubernetes.NewForConfig(inproc.RESTConfigAs(api.Server.Handler(), inproc.SchedulerIdentity()))
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(registry.Config{DataDir: filepath.Join(dir, "registry"), Addr: "127.0.0.1:0", Log: log})
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if err := reg.Start(); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	cleanups = append(cleanups, func() { reg.Close() })
	img, err := pushImage(reg.Addr()+"/bench/testbox:1", bins.testbox)
	if err != nil {
		return nil, err
	}
	errc := make(chan error, 4)
	goRun := func(name string, f func(context.Context) error) {
		go func() {
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	goRun("apiserver", api.Run)
	cm, err := controllers.New(ctx, rc, controller.ManagerConfig{Client: cmClient, Logger: log}, controllers.Options{ClusterCIDR: clusterCIDR})
	if err != nil {
		return nil, err
	}
	goRun("controller-manager", cm.Run)
	sched, err := scheduler.New(scheduler.Config{Client: schedClient, Profiles: []scheduler.Profile{plugins.DefaultProfile("")}}, scheduler.WithLogger(log))
	if err != nil {
		return nil, err
	}
	goRun("scheduler", sched.Run)

	nodeName := fmt.Sprintf("bench-%d-1", os.Getpid()%100000)
	runDir := filepath.Join("/run/podkit", nodeName)
	runTmpfsMounted, runDirCleanup, err := prepareRunDir(runDir, runTmpfs)
	if err != nil {
		return nil, err
	}
	if runTmpfsMounted {
		log.Info("runtime root on a tmpfs, as /run is on a normal host", "dir", runDir)
	}
	metricsFile := filepath.Join(dir, "metrics-addr")
	var cmd *exec.Cmd
	if cli {
		cmd = exec.Command(bins.podkit, "kubelet", "--kubeconfig", kubeconfig, "--node-name", nodeName,
			"--data-dir", filepath.Join(dir, "node"), "--run-dir", runDir, "--log-dir", filepath.Join(dir, "logs"),
			"--address", "127.0.0.1:0", "--shutdown-pods")
	} else {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(self, "-node-harness", "-kubeconfig", kubeconfig, "-node-name", nodeName,
			"-data-dir", filepath.Join(dir, "node"), "-run-dir", runDir, "-log-dir", filepath.Join(dir, "logs"),
			"-init", bins.init, "-metrics-file", metricsFile)
		cmd.Args = append(cmd.Args, harnessArgs...)
	}
	nodeLog, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = nodeLog, nodeLog
	// The node stops (and removes its pods) if this process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("node process: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	cleanups = append(cleanups, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
		nodeLog.Close()
		runDirCleanup()
	})
	client, err := clientFor(kubeconfig)
	if err != nil {
		return nil, err
	}
	n := &node{client: client, image: img, kubeletPID: cmd.Process.Pid,
		supervisorPID: func() int { return pidFile(filepath.Join(runDir, "supervisor.pid")) },
		runDir:        runDir, runTmpfs: runTmpfsMounted, cgroupRoot: podkit.HostName("podkit-", nodeName)}
	if !cli {
		base := func() string {
			b, _ := os.ReadFile(metricsFile)
			return "http://" + strings.TrimSpace(string(b))
		}
		n.gather = func() ([]*dto.MetricFamily, error) { return scrape(base() + "/metrics") }
		if profile {
			rp := remoteProfiler{base: base}
			n.profStart = func(name string) { rp.call("/profile/start?name=" + name) }
			n.profStop = func() { rp.call("/profile/stop") }
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	go func() {
		select {
		case <-exited:
			wcancel()
		case err := <-errc:
			fmt.Fprintln(os.Stderr, err)
			wcancel()
		case <-wctx.Done():
		}
	}()
	if err := podkit.WaitNodesReady(wctx, client, 1, time.Minute); err != nil {
		return nil, fmt.Errorf("%w (node log: %s)", err, filepath.Join(dir, "node.log"))
	}
	n.close = cleanup
	return n, nil
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 1000, 1000
	return kubernetes.NewForConfig(rc)
}

// pushImage builds bin into an image at ref in the registry.
func pushImage(ref, bin string) (string, error) {
	img, err := build.FromBinary(bin, build.Config{})
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref, nil
}

// guardRoute makes p unreachable on the host unless a more specific route
// (the node's bridge) covers it, so pod addresses never leave through the
// default route (as podkit.Cluster does).
func guardRoute(p netip.Prefix) (func(), error) {
	r := &netlink.Route{
		Dst:  &net.IPNet{IP: p.Masked().Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
		Type: unix.RTN_UNREACHABLE, Table: unix.RT_TABLE_MAIN,
	}
	if err := netlink.RouteReplace(r); err != nil {
		return nil, fmt.Errorf("route %s locally (unreachable): %w", p, err)
	}
	return func() {
		if err := netlink.RouteDel(r); err != nil && !errors.Is(err, unix.ESRCH) {
			fmt.Fprintln(os.Stderr, "removing the guard route:", err)
		}
	}, nil
}
