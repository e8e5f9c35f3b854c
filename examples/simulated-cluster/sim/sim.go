// Package sim composes a simulated podkit cluster in one process, in the
// spirit of kwok and of Kubernetes' kubemark: the reference API server
// (in-memory store), the default controllers and the scheduler as in
// podkit.Cluster, and N real kubelets whose runtime is sandbox/fake. Every
// stage of the pod's birth above the kernel runs for real — admission,
// storage, watches, controllers, scheduling, binding, each kubelet's pod
// workers, PLEG and status manager — while sandboxes and containers live in
// memory, so a laptop holds a thousand nodes.
//
// Four stages are swapped on each node, each through the kubelet's or
// nodestatus' configuration, never by patching the product:
//   - the runtime: a fake.Runner with the node's PodCIDR (pods get
//     distinct, plausible IPs);
//   - the machine: a fixed capacity (Config.CPU, Config.Memory) instead of
//     reading /proc;
//   - images: every reference exists and pulls at once, its entrypoint
//     the test program running until stopped (SimulatedImageConfig);
//   - volumes: recorded, not materialized (no token requests, no files),
//     which is all a runtime that mounts nothing can use.
//
// Node IPAM is off: each node registers with a PodCIDR derived from its
// index inside 10.0.0.0/8, which no host route ever sees.
//
// The rest is configured as a real cluster's would be, so that a
// simulation costs what the real pieces cost: the in-process components
// speak protobuf, as Kubernetes' own components do; each node has the
// cluster DNS address podkit.NodeConfig defaults to (without one the
// kubelet would record a DNS fallback warning for every pod); the
// kubelets relist their runtime as rarely as an evented PLEG does
// (Config.RelistInterval), since the fake runtime reports every container
// change; and the nodes' pod directories live on /dev/shm when it exists
// (Config.Dir), a simulated node's disk being no part of the measure.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllers"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/kubelet/nodestatus"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// Config sizes a simulated cluster.
type Config struct {
	// Nodes is the number of simulated nodes (default 1), named
	// "<NodePrefix>-<i>" (NodePrefix defaults to "sim").
	Nodes      int
	NodePrefix string
	// MaxPods per node (default 110, as the kubelet).
	MaxPods int
	// CPU and Memory are each node's capacity (default 32 cores, 128 GiB).
	CPU, Memory resource.Quantity
	// Port is where the API server listens on 127.0.0.1 for kubectl
	// (0: a free port); the simulation's own components reach it in
	// process.
	Port int
	// Kubeconfig, when set, receives a kubeconfig for kubectl.
	Kubeconfig string
	// RelistInterval is each kubelet's runtime relist period (default
	// DefaultRelistInterval). The fake runtime reports every container
	// change as an event and the pod workers record their own operations,
	// so, as with Kubernetes' evented PLEG (which relists every 5
	// minutes), the relist is only a safety net; listing a hundred pods
	// on every node every second would cost a simulation of many nodes
	// more CPU than the pods' births.
	RelistInterval time.Duration
	// Dir is where the nodes' files go (pod directories and logs): a new
	// directory under it, removed by Stop. Default: /dev/shm when it is
	// a directory (a simulated node's disk need not be the host's),
	// else the system's temporary directory.
	Dir string
	// Controllers tunes the controller manager (node IPAM is always off).
	Controllers controllers.Options
	Logger      *slog.Logger
}

// DefaultRelistInterval is a simulated kubelet's relist period.
const DefaultRelistInterval = 30 * time.Second

// defaultDir is /dev/shm when it exists, else the temporary directory.
func defaultDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// clusterDNS is the cluster DNS service address pods' resolv.conf names,
// podkit.NodeConfig's default.
var clusterDNS = netip.MustParseAddr("10.96.0.10")

// Cluster is a running simulated cluster.
type Cluster struct {
	cfg    Config
	dir    string
	api    *app.APIServer
	rc     *rest.Config
	client kubernetes.Interface
	nodes  []*node
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

type node struct {
	name    string
	runtime *fake.Runner
	kubelet *kubelet.Kubelet
}

// Start builds and starts the cluster; Stop stops it. Components that fail
// while running are reported by Stop.
func Start(ctx context.Context, cfg Config) (_ *Cluster, retErr error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	if cfg.Nodes < 0 || cfg.Nodes > 1<<16 {
		return nil, fmt.Errorf("sim: %d nodes: want 1 to 65536 (one /24 of 10.0.0.0/8 each)", cfg.Nodes)
	}
	if cfg.NodePrefix == "" {
		cfg.NodePrefix = "sim"
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = kubelet.DefaultMaxPods
	}
	if cfg.CPU.IsZero() {
		cfg.CPU = resource.MustParse("32")
	}
	if cfg.Memory.IsZero() {
		cfg.Memory = resource.MustParse("128Gi")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RelistInterval == 0 {
		cfg.RelistInterval = DefaultRelistInterval
	}
	if cfg.Dir == "" {
		cfg.Dir = defaultDir()
	}
	cfg.Controllers.Disable = append(cfg.Controllers.Disable, "nodeipam")
	dir, err := os.MkdirTemp(cfg.Dir, "podkit-sim-")
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	// The components run until Stop, whatever becomes of the caller's ctx.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Cluster{cfg: cfg, dir: dir, ctx: runCtx, cancel: cancel}
	defer func() {
		if retErr != nil {
			c.Stop()
		}
	}()
	c.api, err = app.New(ctx, app.Options{Store: app.StoreMemory, BindAddress: "127.0.0.1", Port: cfg.Port,
		Secure:         app.SecureOptions{Insecure: true}, // a simulation authenticates nobody
		KubeconfigPath: cfg.Kubeconfig, Logger: cfg.Logger,
		// A thousand kubelets in one process keep more than kube-apiserver's
		// 400 requests in flight; there is no network to protect here.
		Configure: func(ac *apiserver.Config) error {
			ac.MaxRequestsInFlight, ac.MaxMutatingRequestsInFlight = -1, -1
			return nil
		}})
	if err != nil {
		return nil, fmt.Errorf("sim: API server: %w", err)
	}
	// In-process components reach the API server without TCP.
	c.rc = inproc.RESTConfig(c.api.Server.Handler())
	// Like Kubernetes' own components (--kube-api-content-type), speak
	// protobuf; JSON remains acceptable for resources without protobuf.
	c.rc.ContentType = runtime.ContentTypeProtobuf
	c.rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if c.client, err = kubernetes.NewForConfig(c.rc); err != nil {
		return nil, err
	}
	c.run("apiserver", c.api.Run)
	cm, err := controllers.New(runCtx, c.rc, controller.ManagerConfig{Client: c.client, Logger: cfg.Logger}, cfg.Controllers)
	if err != nil {
		return nil, err
	}
	c.run("controller-manager", cm.Run)
	sched, err := scheduler.New(scheduler.Config{Client: c.client, Profiles: []scheduler.Profile{plugins.DefaultProfile("")}},
		scheduler.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	c.run("scheduler", sched.Run)
	for i := 1; i <= cfg.Nodes; i++ {
		n, err := c.newNode(i)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		c.run("kubelet "+n.name, n.kubelet.Run)
	}
	return c, nil
}

// run runs f until the cluster stops, recording its error.
func (c *Cluster) run(name string, f func(context.Context) error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := f(c.ctx); err != nil && c.ctx.Err() == nil {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
			c.mu.Unlock()
		}
	}()
}

// newNode composes one simulated node: a real kubelet and node status loop
// over the fake runtime.
func (c *Cluster) newNode(i int) (*node, error) {
	name := fmt.Sprintf("%s-%d", c.cfg.NodePrefix, i)
	cidr := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
	rt, err := fake.New(fake.WithPodCIDR(cidr), fake.WithCallRecording(false), fake.WithIDSeed(name), fake.WithLogger(c.cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("sim: node %s: runtime: %w", name, err)
	}
	st, err := nodestatus.New(nodestatus.Config{
		Client: c.client, NodeName: name, PodCIDR: cidr.String(), MaxPods: c.cfg.MaxPods,
		Machine: machine{cpu: c.cfg.CPU, memory: c.cfg.Memory, name: name}, Logger: c.cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: node %s: %w", name, err)
	}
	root := filepath.Join(c.dir, name)
	k, err := kubelet.New(kubelet.Config{
		NodeName: name, Client: c.client, Runtime: rt, Images: newImages(), Volumes: volumes{}, NodeStatus: st,
		RootDir: filepath.Join(root, "kubelet"), LogDir: filepath.Join(root, "logs"),
		MaxPods: c.cfg.MaxPods, RelistInterval: c.cfg.RelistInterval,
		NodeIPs: []netip.Addr{netip.AddrFrom4([4]byte{172, 30, byte(i >> 8), byte(i)})}, Logger: c.cfg.Logger,
		// As podkit.NodeConfig's defaults: without a cluster DNS address
		// every ClusterFirst pod would fall back to Default with a warning
		// event, which no configured cluster emits.
		DNS: cni.NodeDNS{ClusterDNS: []netip.Addr{clusterDNS}, ClusterDomain: "cluster.local"},
	})
	if err != nil {
		return nil, fmt.Errorf("sim: node %s: kubelet: %w", name, err)
	}
	return &node{name: name, runtime: rt, kubelet: k}, nil
}

// Client is an in-process client of the API server.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// RESTConfig reaches the API server in process.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rc) }

// URL is the API server's address for kubectl.
func (c *Cluster) URL() string { return c.api.URL }

// NodeNames are the simulated nodes' names.
func (c *Cluster) NodeNames() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.name
	}
	return out
}

// Stop stops every component and removes the cluster's files; it returns
// the errors components failed with while running.
func (c *Cluster) Stop() error {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	errs := append([]error(nil), c.errs...)
	c.mu.Unlock()
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// machine is a simulated node's fixed hardware.
type machine struct {
	cpu, memory resource.Quantity
	name        string
}

func (m machine) Capacity(context.Context) (corev1.ResourceList, error) {
	return corev1.ResourceList{corev1.ResourceCPU: m.cpu, corev1.ResourceMemory: m.memory,
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti")}, nil
}

func (m machine) SystemInfo(context.Context) (nodestatus.SystemInfo, error) {
	return nodestatus.SystemInfo{MachineID: m.name, SystemUUID: m.name, BootID: m.name,
		KernelVersion: "simulated", OSImage: "podkit simulated node"}, nil
}

// Signals reports nothing observed: a simulated node is never under
// pressure.
func (machine) Signals(context.Context) (nodestatus.Signals, error) { return nodestatus.Signals{}, nil }

// volumes records nothing and mounts nothing: the fake runtime has no
// filesystem to mount into.
type volumes struct{}

var _ kubelet.Volumes = volumes{}

func (volumes) Setup(_ context.Context, pod *corev1.Pod) (map[string]string, error) {
	paths := make(map[string]string, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		paths[v.Name] = "/simulated/" + v.Name
	}
	return paths, nil
}

func (volumes) Mounts(*corev1.Pod, *corev1.Container, map[string]string) ([]sandbox.Mount, error) {
	return nil, nil
}

func (volumes) Teardown(context.Context, types.UID) error { return nil }

// WaitNodesReady waits until every simulated node reports Ready.
func (c *Cluster) WaitNodesReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, n := range nodes.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready >= len(c.nodes) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sim: %d of %d nodes Ready: %w", ready, len(c.nodes), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
