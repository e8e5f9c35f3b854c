package podkit

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

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllers"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// ClusterConfig configures the reference composition: an API server,
// the controllers, the scheduler, an image registry and N nodes in one
// process. Every stage can be replaced through the hooks.
type ClusterConfig struct {
	// DataDir holds everything the cluster stores: the API server's
	// database, the registry, and one directory per node (default
	// /var/lib/podkit).
	DataDir string
	// Nodes is the number of nodes (default 1), named
	// "<NodePrefix>-<i>" (NodePrefix defaults to "podkit-node"); host-level
	// names (bridges, cgroup roots, run dirs) derive from them.
	Nodes      int
	NodePrefix string
	// Address and Port are the API server's (default 127.0.0.1:6443;
	// Port -1 picks a free port).
	Address string
	Port    int
	// Kubeconfig, when set, receives a kubeconfig for kubectl.
	Kubeconfig string
	// Store is app.StoreBolt (default) or app.StoreMemory.
	Store string
	// ClusterCIDR is the pod range node PodCIDRs come from (default
	// 10.244.0.0/16).
	ClusterCIDR netip.Prefix
	// ServiceCIDR is the Services' ClusterIP range (default 10.96.0.0/12),
	// routed locally on every node; the cluster DNS is its tenth address
	// (services.go).
	ServiceCIDR netip.Prefix
	// DNSUpstreams are the cluster DNS's resolvers ("ip:port") for names
	// outside the cluster domain; empty refuses them.
	DNSUpstreams []string
	// DemoImages are images to build into the embedded registry: name:tag
	// → a static executable (its entrypoint). Missing files are skipped
	// with a warning.
	DemoImages map[string]string
	// APIServer may change the API server's configuration (swap a stage).
	APIServer func(*apiserver.Config) error
	// Insecure serves the API server over plain HTTP without
	// authentication and the kubelets without TLS (app.SecureOptions
	// .Insecure): for tests and embedding only. By default the API server
	// serves HTTPS from the cluster PKI in <DataDir>/apiserver/pki, the
	// kubeconfig holds the admin certificate, and each kubelet serves
	// HTTPS with its own certificate and authenticates its callers.
	Insecure bool
	// DisableBirthTrace leaves the pod birth trace off (see BirthTrace).
	DisableBirthTrace bool
	// Node may change each node's configuration (swap its runtime or
	// network, or its kubelet's settings).
	Node func(i int, cfg *NodeConfig)
	// Controllers tunes the controller manager.
	Controllers controllers.Options
	// Profiles are the scheduler's (default: the default profile).
	Profiles []scheduler.Profile
	// ShutdownGrace bounds how long Shutdown waits for each container to
	// stop on its stop signal before killing it (default 10 s).
	ShutdownGrace time.Duration
	Logger        *slog.Logger
}

// Cluster is a running reference composition.
type Cluster struct {
	cfg      ClusterConfig
	log      *slog.Logger
	api      *app.APIServer
	rc       *rest.Config
	client   kubernetes.Interface
	registry *demoRegistry // cluster_images.go
	nodes    []*Node
	images   map[string]string // demo image name → reference
	unguard  func() error      // removes the cluster CIDR's guard route
}

// NodeName is the name of the cluster's i-th node (from 1).
func (c *Cluster) NodeName(i int) string { return fmt.Sprintf("%s-%d", c.cfg.NodePrefix, i) }

// NewCluster opens the cluster's state and listeners. Run starts it.
func NewCluster(ctx context.Context, cfg ClusterConfig) (_ *Cluster, retErr error) {
	begin := time.Now()
	if cfg.DataDir == "" {
		cfg.DataDir = "/var/lib/podkit"
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	if cfg.NodePrefix == "" {
		cfg.NodePrefix = "podkit-node"
	}
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = 6443
	} else if cfg.Port < 0 {
		cfg.Port = 0
	}
	if cfg.Store == "" {
		cfg.Store = app.StoreBolt
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = []scheduler.Profile{plugins.DefaultProfile("")}
	}
	if !cfg.ClusterCIDR.IsValid() {
		cfg.ClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
	}
	cfg.Controllers.ClusterCIDR = cfg.ClusterCIDR
	if !cfg.ServiceCIDR.IsValid() {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, images: map[string]string{}}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("podkit: data dir: %w", err)
	}
	unguard, err := guardRoutes(cfg.ClusterCIDR, cfg.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	c.unguard = unguard
	defer func() {
		if retErr != nil {
			unguard()
		}
	}()
	api, err := app.New(ctx, app.Options{
		DataDir: filepath.Join(cfg.DataDir, "apiserver"), Store: cfg.Store, BindAddress: cfg.Address, Port: cfg.Port,
		KubeconfigPath: cfg.Kubeconfig, Logger: cfg.Logger, Configure: c.configureAPIServer,
		ServiceClusterIPRange: cfg.ServiceCIDR.String(), Secure: app.SecureOptions{Insecure: cfg.Insecure},
	})
	if err != nil {
		return nil, fmt.Errorf("podkit: API server: %w", err)
	}
	c.api = api
	c.log.Debug("API server built", "elapsed", time.Since(begin))
	// In-process components reach the API server without TCP, each with
	// its identity (inproc.TransportAs); Client is the loopback admin.
	c.rc = inproc.RESTConfigAs(api.Server.Handler(), inproc.LoopbackIdentity())
	if c.client, err = kubernetes.NewForConfig(c.rc); err != nil {
		return nil, err
	}
	c.registry, err = newDemoRegistry(filepath.Join(cfg.DataDir, "registry"), cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("podkit: registry: %w", err)
	}
	if err := c.registry.Start(); err != nil {
		return nil, fmt.Errorf("podkit: registry: %w", err)
	}
	if err := c.seedImages(); err != nil {
		c.registry.Close()
		return nil, err
	}
	for i := 1; i <= cfg.Nodes; i++ {
		nc := NodeConfig{Name: c.NodeName(i), Client: c.client, DataDir: filepath.Join(cfg.DataDir, "nodes", c.NodeName(i)),
			LogDir: filepath.Join(cfg.DataDir, "logs"), Logger: cfg.Logger}
		if err := c.nodeIdentity(&nc); err != nil {
			c.closeNodes()
			c.registry.Close()
			return nil, err
		}
		c.nodeServices(&nc)
		if cfg.Node != nil {
			cfg.Node(i, &nc)
		}
		n, err := StartNode(ctx, nc)
		if err != nil {
			c.closeNodes()
			c.registry.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	c.log.Debug("cluster opened: registry and nodes", "elapsed", time.Since(begin))
	return c, nil
}

// URL is the API server's address; Kubeconfig the file written for it.
func (c *Cluster) URL() string { return c.api.URL }

// Client is an in-process client of the cluster's API server.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// RESTConfig reaches the API server in process.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rc) }

// Image is the registry reference of a demo image ("" when its executable
// is missing); see WaitImages.
func (c *Cluster) Image(ref string) string { return c.images[ref] }

// Registry is the embedded registry's host:port.
func (c *Cluster) Registry() string { return c.registry.Addr() }

// Nodes are the cluster's nodes.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Run runs every component until ctx ends or one fails, then stops them
// all. Pods keep running (Shutdown stops them).
func (c *Cluster) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 4+len(c.nodes))
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	run("apiserver", c.api.Run)
	cmRC, cmClient, err := c.componentClient(inproc.ControllerManagerIdentity())
	if err != nil {
		return err
	}
	cm, err := controllers.New(ctx, cmRC, controller.ManagerConfig{Client: cmClient, Logger: c.log}, c.cfg.Controllers)
	if err != nil {
		return err
	}
	run("controller-manager", cm.Run)
	_, schedClient, err := c.componentClient(inproc.SchedulerIdentity())
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{Client: schedClient, Profiles: c.cfg.Profiles}, scheduler.WithLogger(c.log))
	if err != nil {
		return err
	}
	run("scheduler", sched.Run)
	for _, n := range c.nodes {
		run("node "+n.cfg.Name, n.Run)
	}
	var ferr error
	select {
	case <-ctx.Done():
	case ferr = <-errc:
		cancel()
	}
	wg.Wait()
	return ferr
}

// Shutdown stops every pod of every node gracefully (stop signal, then
// SIGKILL after ShutdownGrace), removes their sandboxes and what the nodes
// made on the host, and closes the registry. Call it after Run returned.
func (c *Cluster) Shutdown(ctx context.Context) error {
	var errs []error
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.runtime == nil {
			continue
		}
		_, cs, err := n.runtime.List(ctx)
		errs = append(errs, err)
		var mu sync.Mutex
		for _, st := range cs {
			if st.State != sandbox.ContainerStateRunning {
				continue
			}
			wg.Add(1)
			go func(rt sandbox.SandboxRunner, id string) {
				defer wg.Done()
				if err := rt.StopContainer(ctx, id, c.cfg.ShutdownGrace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}(n.runtime, st.ID)
		}
		wg.Wait()
	}
	for _, n := range c.nodes {
		errs = append(errs, n.Shutdown(ctx))
	}
	errs = append(errs, c.registry.Close(), c.unguard())
	return errors.Join(errs...)
}

func (c *Cluster) closeNodes() {
	for _, n := range c.nodes {
		n.close()
	}
}

// WaitNodesReady waits until at least n nodes have the Ready condition
// True, or timeout. It lists the nodes and then follows their changes
// (a watch), so it returns as soon as the last one turns Ready.
func WaitNodesReady(ctx context.Context, c kubernetes.Interface, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
			ready := map[string]bool{}
			for i := range nodes.Items {
				ready[nodes.Items[i].Name] = nodeReady(&nodes.Items[i])
			}
			if countTrue(ready) >= n {
				return nil
			}
			if w, err := c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion}); err == nil {
				for ev := range w.ResultChan() {
					nd, ok := ev.Object.(*corev1.Node)
					if !ok {
						continue
					}
					ready[nd.Name] = ev.Type != watch.Deleted && nodeReady(nd)
					if countTrue(ready) >= n {
						w.Stop()
						return nil
					}
				}
				w.Stop()
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("podkit: waiting for %d ready node(s): %w", n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nodeReady(nd *corev1.Node) bool {
	for _, cond := range nd.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// guardRoute makes traffic to p unroutable on the host unless a more
// specific route (a node's bridge) covers it, so packets for pod addresses
// that no node serves yet never fall through to the default route.
func guardRoute(p netip.Prefix) (remove func() error, err error) {
	r := &netlink.Route{
		Dst:  ipNet(p), // services_route.go
		Type: unix.RTN_UNREACHABLE, Table: unix.RT_TABLE_MAIN,
	}
	if err := netlink.RouteReplace(r); err != nil {
		return nil, fmt.Errorf("podkit: route %s locally (unreachable): %w", p, err)
	}
	return func() error {
		if err := netlink.RouteDel(r); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("podkit: remove the %s guard route: %w", p, err)
		}
		return nil
	}, nil
}
