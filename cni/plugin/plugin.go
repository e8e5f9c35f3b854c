// Package plugin is the cni.Networker that runs real CNI plugins, per the
// CNI specification, through the project's own libcni: network
// configuration lists from a conf directory, plugin binaries from bin
// directories, ADD/DEL/CHECK with the CNI_* environment, results parsed and
// cached in a cache directory so DEL and CHECK receive the ADD result.
//
// It is the kubelet's classic network plugin path (step 13 of podkit's birth
// sequence) for users who want Calico, Cilium, flannel or the reference
// plugins instead of podkit's built-in bridge. Pods are named to plugins
// with the K8S_POD_* CNI_ARGS the kubelet and containerd pass.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/netns"
)

// Defaults as the kubelet and containerd use them.
const (
	DefaultConfDir  = "/etc/cni/net.d"
	DefaultBinDir   = "/opt/cni/bin"
	DefaultCacheDir = "/var/lib/cni"
)

// Config locates configuration, binaries and the result cache. Empty
// fields take the defaults above.
type Config struct {
	ConfDir  string
	BinDirs  []string
	CacheDir string
}

// Option customises a Networker; options reject bad values.
type Option func(*options) error

type options struct {
	network  string
	nodeNS   string
	loopback bool
	exec     invoke.Exec
	stderr   io.Writer
	logger   *slog.Logger
}

// WithNetworkName selects the network by name instead of taking the first
// configuration file in lexical order.
func WithNetworkName(name string) Option {
	return func(o *options) error {
		if name == "" {
			return errors.New("empty network name")
		}
		o.network = name
		return nil
	}
}

// WithNodeNetNS runs the plugins inside the network namespace at path (the
// node's) instead of the caller's.
func WithNodeNetNS(path string) Option {
	return func(o *options) error {
		if err := netns.Check(path); err != nil {
			return err
		}
		o.nodeNS = path
		return nil
	}
}

// WithLoopback also runs a loopback network (the "loopback" plugin) before
// the pod network, as containerd does, so lo comes up in every pod.
func WithLoopback() Option {
	return func(o *options) error { o.loopback = true; return nil }
}

// WithExec replaces how plugins are found and run (libcni's invoke.Exec).
func WithExec(e invoke.Exec) Option {
	return func(o *options) error {
		if e == nil {
			return errors.New("nil exec")
		}
		o.exec = e
		return nil
	}
}

// WithPluginStderr sends the plugins' stderr to w (default os.Stderr).
func WithPluginStderr(w io.Writer) Option {
	return func(o *options) error {
		if w == nil {
			return errors.New("nil writer")
		}
		o.stderr = w
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("nil logger")
		}
		o.logger = l
		return nil
	}
}

// Networker runs CNI plugins. It is safe for concurrent use.
type Networker struct {
	cfg  Config
	o    options
	cni  *libcni.CNIConfig
	lo   *libcni.NetworkConfigList
	mu   sync.RWMutex
	list *libcni.NetworkConfigList
}

var (
	_ cni.Networker        = (*Networker)(nil)
	_ cni.Checker          = (*Networker)(nil)
	_ cni.GarbageCollector = (*Networker)(nil)
)

// New loads the network configuration and returns a Networker. Errors wrap
// ErrNoNetwork when the conf directory holds no usable network.
func New(cfg Config, opts ...Option) (*Networker, error) {
	o := options{stderr: os.Stderr, logger: slog.Default()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("cni plugin: %w", err)
		}
	}
	if cfg.ConfDir == "" {
		cfg.ConfDir = DefaultConfDir
	}
	if len(cfg.BinDirs) == 0 {
		cfg.BinDirs = []string{DefaultBinDir}
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCacheDir
	}
	ex := o.exec
	if ex == nil {
		ex = rawExec(o.stderr)
	}
	if o.nodeNS != "" {
		ex = &nsExec{Exec: ex, nsPath: o.nodeNS}
	}
	n := &Networker{cfg: cfg, o: o, cni: libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.CacheDir, ex)}
	if o.loopback {
		lo, err := libcni.NetworkConfFromBytes([]byte(loopbackConf))
		if err != nil {
			return nil, fmt.Errorf("cni plugin: loopback network: %w", err)
		}
		n.lo = lo
	}
	if err := n.Reload(); err != nil {
		return nil, err
	}
	return n, nil
}

// Reload reads the conf directory again (after a CNI installer wrote it).
func (n *Networker) Reload() error {
	list, err := loadNetwork(n.cfg.ConfDir, n.o.network)
	if err != nil {
		return fmt.Errorf("cni plugin: %w", err)
	}
	n.mu.Lock()
	n.list = list
	n.mu.Unlock()
	return nil
}

// NetworkName is the name of the network in use.
func (n *Networker) NetworkName() string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.list.Name
}

func (n *Networker) network() *libcni.NetworkConfigList {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.list
}

func runtimeConf(a cni.Attachment) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: a.ContainerID,
		NetNS:       a.NetNS,
		IfName:      a.IfName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", a.Pod.Namespace},
			{"K8S_POD_NAME", a.Pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", a.ContainerID},
		},
	}
}

// Setup runs ADD for the loopback network (if enabled) and the pod network.
// An attachment with a cached result from an earlier ADD is deleted first,
// so a retry converges; a failed ADD is rolled back with DEL.
func (n *Networker) Setup(ctx context.Context, att *cni.Attachment) (*cni.Result, error) {
	a, err := att.Normalize(true)
	if err != nil {
		return nil, fmt.Errorf("cni plugin: setup: %w", err)
	}
	if err := netns.Check(a.NetNS); err != nil {
		return nil, fmt.Errorf("cni plugin: setup %s: %w", a.ContainerID, err)
	}
	list := n.network()
	rt := runtimeConf(a)
	if prev, err := n.cni.GetNetworkListCachedResult(list, rt); err == nil && prev != nil {
		if err := n.cni.DelNetworkList(ctx, list, rt); err != nil {
			return nil, fmt.Errorf("cni plugin: setup %s: delete earlier attachment: %w", a.ContainerID, err)
		}
	}
	if n.lo != nil {
		lrt := runtimeConf(a)
		lrt.IfName = "lo"
		if _, err := n.cni.AddNetworkList(ctx, n.lo, lrt); err != nil {
			return nil, fmt.Errorf("cni plugin: setup %s: loopback: %w", a.ContainerID, err)
		}
	}
	res, err := n.cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		if derr := n.teardown(context.WithoutCancel(ctx), a); derr != nil {
			n.o.logger.Warn("cni plugin: rollback after failed ADD", "container", a.ContainerID, "err", derr)
		}
		return nil, fmt.Errorf("cni plugin: setup %s: network %s: %w", a.ContainerID, list.Name, err)
	}
	out, err := convertResult(res)
	if err != nil {
		return nil, fmt.Errorf("cni plugin: setup %s: %w", a.ContainerID, err)
	}
	n.o.logger.Debug("cni plugin: attached", "network", list.Name, "container", a.ContainerID, "pod", a.Pod, "ips", out.PodIPs())
	return out, nil
}

// Teardown runs DEL for the pod network, then the loopback network. When
// the namespace is gone the plugins get an empty CNI_NETNS, as the
// specification allows, and release what they hold outside it.
func (n *Networker) Teardown(ctx context.Context, att *cni.Attachment) error {
	a, err := att.Normalize(false)
	if err != nil {
		return fmt.Errorf("cni plugin: teardown: %w", err)
	}
	if err := n.teardown(ctx, a); err != nil {
		return fmt.Errorf("cni plugin: teardown %s: %w", a.ContainerID, err)
	}
	return nil
}

func (n *Networker) teardown(ctx context.Context, a cni.Attachment) error {
	if a.NetNS != "" && netns.Check(a.NetNS) != nil {
		a.NetNS = ""
	}
	list := n.network()
	if err := n.cni.DelNetworkList(ctx, list, runtimeConf(a)); err != nil {
		return fmt.Errorf("network %s: %w", list.Name, err)
	}
	if n.lo != nil {
		lrt := runtimeConf(a)
		lrt.IfName = "lo"
		if err := n.cni.DelNetworkList(ctx, n.lo, lrt); err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
	}
	return nil
}

// Check runs CHECK for the pod network. A plugin reporting a mismatch
// yields an error wrapping cni.ErrNotAttached.
func (n *Networker) Check(ctx context.Context, att *cni.Attachment) error {
	a, err := att.Normalize(true)
	if err != nil {
		return fmt.Errorf("cni plugin: check: %w", err)
	}
	list := n.network()
	rt := runtimeConf(a)
	if prev, err := n.cni.GetNetworkListCachedResult(list, rt); err != nil || prev == nil {
		return fmt.Errorf("cni plugin: check %s: no cached result: %w", a.ContainerID, cni.ErrNotAttached)
	}
	if err := n.cni.CheckNetworkList(ctx, list, rt); err != nil {
		var perr *types.Error
		if errors.As(err, &perr) {
			return fmt.Errorf("cni plugin: check %s: %w: %w", a.ContainerID, cni.ErrNotAttached, err)
		}
		return fmt.Errorf("cni plugin: check %s: %w", a.ContainerID, err)
	}
	return nil
}

// GC deletes every cached attachment of the pod network (and of the
// loopback network) that is not in keep, and on CNI 1.1+ networks asks the
// plugins to release anything else they hold (CNI GC).
func (n *Networker) GC(ctx context.Context, keep []*cni.Attachment) error {
	args := &libcni.GCArgs{}
	loArgs := &libcni.GCArgs{}
	for _, k := range keep {
		a, err := k.Normalize(false)
		if err != nil {
			return fmt.Errorf("cni plugin: gc: %w", err)
		}
		args.ValidAttachments = append(args.ValidAttachments, types.GCAttachment{ContainerID: a.ContainerID, IfName: a.IfName})
		loArgs.ValidAttachments = append(loArgs.ValidAttachments, types.GCAttachment{ContainerID: a.ContainerID, IfName: "lo"})
	}
	list := n.network()
	if err := n.cni.GCNetworkList(ctx, list, args); err != nil {
		return fmt.Errorf("cni plugin: gc of network %s: %w", list.Name, err)
	}
	if n.lo != nil {
		if err := n.cni.GCNetworkList(ctx, n.lo, loArgs); err != nil {
			return fmt.Errorf("cni plugin: gc of loopback: %w", err)
		}
	}
	return nil
}
