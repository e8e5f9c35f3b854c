package podkit

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/kubelet/nodestatus"
	"github.com/podkit/podkit/kubelet/server"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
)

// NodeConfig configures one node: a kubelet with its runtime, network,
// cgroups, images and snapshots, its node status and its log server.
// Host-level names (bridge, cgroup root, run dir) derive from Name unless
// set, so several nodes can share one host.
type NodeConfig struct {
	// Name is the node's name (required).
	Name string
	// Client reaches the API server (required).
	Client kubernetes.Interface
	// DataDir holds images, snapshots, pod dirs and IPAM state (default
	// /var/lib/podkit/nodes/<name>).
	DataDir string
	// RunDir is the runtime's root: pinned namespaces, container bundles,
	// the supervisor's socket (default /run/podkit/<name>). Shutdown
	// removes it once no sandbox is left in it.
	RunDir string
	// LogDir receives container logs (default /var/log/pods).
	LogDir string
	// PodCIDR is the node's pod range; zero waits for the control plane
	// (node IPAM) to assign one.
	PodCIDR netip.Prefix
	// BridgeName and CgroupRoot default to names derived from Name.
	BridgeName, CgroupRoot string
	// NodeNetNS, when set, is the network namespace holding the node's
	// bridge (tests put a throwaway namespace there); "" is the host's.
	NodeNetNS string
	// ClusterDNS and ClusterDomain go into pods' resolv.conf (defaults
	// 10.96.0.10 and cluster.local).
	ClusterDNS    []netip.Addr
	ClusterDomain string
	// KubeletAddr is where the kubelet's log server listens (default
	// 127.0.0.1:0, a free port; the node object advertises it).
	KubeletAddr string
	// ServingCert makes the kubelet server speak HTTPS and require
	// authentication (client certificates of ClientCA, or bearer tokens
	// the API server vouches for through TokenReview) and authorization
	// (SubjectAccessReview on nodes/proxy, nodes/log, …) before it serves
	// logs; nil serves plain HTTP to anyone (tests, embedding).
	ServingCert *tls.Certificate
	// ClientCA verifies callers' client certificates: the cluster CA,
	// which signed the API server's kubelet-client certificate.
	ClientCA *x509.CertPool
	// Registries configures image registries (mirrors, TLS, auth).
	Registries *image.RegistryConfig
	// InitBinary is native.Config.InitBinary.
	InitBinary string
	// SupervisorBinary is native.Config.Binary: the executable re-executed
	// as the node's runtime supervisor, which must dispatch its mode
	// (podkit-init does; empty: this process's own binary, which must call
	// native.Init). When it cannot start the supervisor (an older
	// podkit-init), the node falls back to its own binary.
	SupervisorBinary string
	// Runtime and Network replace the native runtime and the bridge.
	Runtime sandbox.SandboxRunner
	Network cni.Networker
	// Kubelet, when set, may change the kubelet's configuration last.
	Kubelet func(*kubelet.Config)
	// StatusUpdateFrequency is nodestatus' (0: its default).
	StatusUpdateFrequency time.Duration
	// Services configures the node's service proxy, the local route of the
	// service range and the node-local cluster DNS (services.go).
	Services   ServicesConfig
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Node is a running node.
type Node struct {
	cfg     NodeConfig
	log     *slog.Logger
	status  *nodestatus.Controller
	lis     net.Listener
	bridge  *cni.Bridge
	tree    *cgroups.Tree
	runtime sandbox.SandboxRunner
	snaps   *overlay.Driver
	images  *image.Service
	kubelet *kubelet.Kubelet
	// posted is closed once the node has posted a Ready status (nodeready.go).
	posted chan struct{}
}

// HostName derives a host-level name (at most 15 bytes, a valid interface
// name) for node: prefix plus a short hash of the node's name.
func HostName(prefix, node string) string {
	sum := sha256.Sum256([]byte(node))
	n := 15 - len(prefix)
	return prefix + hex.EncodeToString(sum[:])[:n]
}

func (c *NodeConfig) defaults() error {
	if c.Name == "" || c.Client == nil {
		return errors.New("podkit: a node needs a name and an API client")
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join("/var/lib/podkit/nodes", c.Name)
	}
	if c.RunDir == "" {
		c.RunDir = filepath.Join("/run/podkit", c.Name)
	}
	if c.LogDir == "" {
		c.LogDir = kubelet.DefaultLogDir
	}
	if c.BridgeName == "" {
		c.BridgeName = HostName("pk", c.Name)
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/" + HostName("podkit-", c.Name)
	}
	if len(c.ClusterDNS) == 0 {
		c.ClusterDNS = []netip.Addr{netip.MustParseAddr("10.96.0.10")}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.KubeletAddr == "" {
		c.KubeletAddr = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// StartNode opens the node's stores and its log server's listener. Run
// does the rest.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.Name), posted: make(chan struct{})}
	var err error
	if n.lis, err = net.Listen("tcp", cfg.KubeletAddr); err != nil {
		return nil, fmt.Errorf("node %s: kubelet server: %w", cfg.Name, err)
	}
	fail := func(err error) (*Node, error) { n.close(); return nil, fmt.Errorf("node %s: %w", cfg.Name, err) }
	if n.snaps, err = overlay.New(filepath.Join(cfg.DataDir, "snapshots")); err != nil {
		return fail(err)
	}
	if n.images, err = image.New(image.Config{Root: filepath.Join(cfg.DataDir, "images"), Registries: cfg.Registries, Log: n.log}); err != nil {
		return fail(err)
	}
	if n.tree, err = cgroups.New(cgroups.WithRoot(cfg.CgroupRoot), cgroups.WithLogger(n.log)); err != nil {
		return fail(err)
	}
	_, port, _ := net.SplitHostPort(n.lis.Addr().String())
	kport, _ := strconv.Atoi(port)
	var addrs []corev1.NodeAddress
	if host, _, _ := net.SplitHostPort(n.lis.Addr().String()); host != "" && host != "0.0.0.0" && host != "::" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: host})
	}
	n.status, err = nodestatus.New(nodestatus.Config{
		Client: cfg.Client, NodeName: cfg.Name, PodCIDR: prefixString(cfg.PodCIDR), Addresses: addrs,
		Machine: nodestatus.HostMachine(cfg.DataDir), KubeletPort: kport,
		Images: n.nodeImages, Ready: n.ready, StatusUpdateFrequency: cfg.StatusUpdateFrequency, Logger: n.log,
	})
	if err != nil {
		return fail(err)
	}
	return n, nil
}

func prefixString(p netip.Prefix) string {
	if !p.IsValid() {
		return ""
	}
	return p.String()
}

// KubeletURL is the base URL of the node's log server.
func (n *Node) KubeletURL() string {
	if n.cfg.ServingCert != nil {
		return "https://" + n.lis.Addr().String()
	}
	return "http://" + n.lis.Addr().String()
}

func (n *Node) ready() error {
	if n.kubelet == nil {
		return errors.New("container runtime is starting")
	}
	return n.kubelet.Healthy()
}

func (n *Node) nodeImages(ctx context.Context) ([]corev1.ContainerImage, error) {
	imgs, err := n.images.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]corev1.ContainerImage, 0, len(imgs))
	for _, i := range imgs {
		out = append(out, corev1.ContainerImage{Names: i.Names(), SizeBytes: i.Size})
	}
	return out, nil
}

// Run registers the node, waits for its PodCIDR when none was given, wires
// the network and the runtime, and runs the kubelet until ctx ends. Pods
// keep running afterwards (a restarted node adopts them); Shutdown stops
// them.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 8)
	go func() { errc <- n.status.Run(ctx) }()
	select {
	case <-n.status.Registered():
	case err := <-errc:
		return fmt.Errorf("node %s: registration: %w", n.cfg.Name, err)
	case <-ctx.Done():
		return nil
	}
	cidr := n.cfg.PodCIDR
	if !cidr.IsValid() {
		p, err := n.waitPodCIDR(ctx)
		if err != nil || !p.IsValid() {
			return err // nil: ctx ended
		}
		cidr = p
	}
	if err := n.wire(ctx, cidr); err != nil {
		return err
	}
	defer n.startServices(ctx, errc)()
	k := n.kubelet
	srv := server.New(server.Config{Pods: k.Pods, Pod: k.Pod,
		Logs: server.PollLogFile(k.LogFile, 0, nil), Healthz: k.Healthy, Logger: n.log,
		Authenticator: n.serverAuthenticator(), Authorizer: n.serverAuthorizer(), NodeName: n.cfg.Name})
	go func() { errc <- server.Serve(ctx, n.serverListener(), srv) }()
	kubeletDone := make(chan struct{})
	go func() { err := k.Run(ctx); close(kubeletDone); errc <- err }()
	// Return only once the kubelet has: Shutdown unmounts the pods'
	// volumes, and a pod sync still running would mount them again.
	defer func() { cancel(); <-kubeletDone }()
	go n.reportReady(ctx)
	n.log.Info("node running", "podCIDR", cidr, "kubelet", n.KubeletURL())
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// wire builds the network, the runtime and the kubelet once the PodCIDR is
// known.
func (n *Node) wire(ctx context.Context, cidr netip.Prefix) error {
	netw := n.cfg.Network
	if netw == nil && n.cfg.Runtime == nil {
		opts := []cni.BridgeOption{cni.WithBridgeName(n.cfg.BridgeName), cni.WithIPForward(true), cni.WithLogger(n.log)}
		if n.cfg.NodeNetNS != "" {
			opts = append(opts, cni.WithNodeNetNS(n.cfg.NodeNetNS))
		}
		b, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: cidr, StateDir: n.cfg.DataDir}, opts...)
		if err != nil {
			return fmt.Errorf("node %s: bridge: %w", n.cfg.Name, err)
		}
		n.bridge, netw = b, b
	}
	rt := n.cfg.Runtime
	var timer *kubelet.NetworkTimer
	if rt == nil {
		netw, timer = timedNetwork(netw)
		if err := os.MkdirAll(n.cfg.RunDir, 0o711); err != nil {
			return fmt.Errorf("node %s: %w", n.cfg.Name, err)
		}
		// The supervisor outlives the kubelet while containers run; with none
		// left and no kubelet connected it has nothing to do: exit soon.
		rc := native.Config{Root: n.cfg.RunDir, Network: netw, Cgroups: n.tree, Binary: n.cfg.SupervisorBinary,
			InitBinary: n.cfg.InitBinary, Logger: n.log, SupervisorIdleExit: time.Second}
		r, err := native.New(ctx, rc)
		if err != nil && rc.Binary != "" && ctx.Err() == nil {
			n.log.Warn("runtime supervisor binary failed; re-executing this binary instead", "binary", rc.Binary, "err", err)
			rc.Binary = ""
			r, err = native.New(ctx, rc)
		}
		if err != nil {
			return fmt.Errorf("node %s: runtime: %w", n.cfg.Name, err)
		}
		rt = r
	}
	n.runtime = rt
	kc := kubelet.Config{
		NodeName: n.cfg.Name, Client: n.cfg.Client, Runtime: rt, Images: n.images, Snapshots: n.snaps,
		Cgroups: n.tree, RootDir: filepath.Join(n.cfg.DataDir, "kubelet"), LogDir: n.cfg.LogDir,
		DNS:    cni.NodeDNS{ClusterDNS: n.cfg.ClusterDNS, ClusterDomain: n.cfg.ClusterDomain},
		Logger: n.log, Registerer: n.cfg.Registerer, NetworkTimer: timer,
	}
	if n.cfg.Kubelet != nil {
		n.cfg.Kubelet(&kc)
	}
	k, err := kubelet.New(kc)
	if err != nil {
		return fmt.Errorf("node %s: kubelet: %w", n.cfg.Name, err)
	}
	n.kubelet = k
	return nil
}

// Shutdown stops and removes every pod sandbox of the node, unmounts the
// pods' volumes (kubelet.UnmountVolumes: what lived in memory is gone, what
// is on disk stays) and removes what the node made on the host (bridge,
// cgroup tree, and the run dir once its supervisor has exited, when no
// sandbox is left in it), after Run has returned. The
// pods' API objects stay; a later node on the same data dir starts them
// again. A node whose Run returned without Shutdown keeps its run dir:
// its containers still run, and the next node adopts them from it.
func (n *Node) Shutdown(ctx context.Context) error {
	var errs []error
	if n.runtime != nil {
		sbs, _, err := n.runtime.List(ctx)
		errs = append(errs, err)
		for _, sb := range sbs {
			errs = append(errs, n.runtime.RemovePodSandbox(ctx, sb.ID))
		}
		if c, ok := n.runtime.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
		if r, ok := n.runtime.(*native.Runtime); ok {
			if err := r.RemoveRoot(ctx); errors.Is(err, native.ErrRootInUse) {
				n.log.Warn("keeping the node's run dir", "dir", n.cfg.RunDir, "reason", err)
			} else {
				errs = append(errs, err)
			}
		}
	}
	if n.kubelet != nil {
		// The kubelet leaves the volumes of the pods it leaves running
		// mounted; the pods are gone now, so must the mounts be.
		errs = append(errs, n.kubelet.UnmountVolumes(ctx))
	}
	if n.bridge != nil {
		errs = append(errs, n.bridge.Cleanup(ctx), n.bridge.Close())
	}
	if n.tree != nil {
		errs = append(errs, n.tree.Cleanup(ctx))
	}
	n.close()
	return errors.Join(errs...)
}

func (n *Node) close() {
	if n.lis != nil {
		n.lis.Close()
	}
	if n.snaps != nil {
		n.snaps.Close()
	}
}
