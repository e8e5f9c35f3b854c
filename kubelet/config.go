package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/kubelet/prober"
	"github.com/podkit/podkit/kubelet/volume"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
)

// Images is the image stage (step 10) as the kubelet uses it;
// *image.Service satisfies it. Get looks an image up locally (wrapping
// image.ErrNotFound when it is missing), Ensure applies a pull policy,
// Layers and Open read a stored image.
type Images interface {
	Get(ctx context.Context, ref string) (*image.Image, error)
	Ensure(ctx context.Context, ref string, policy corev1.PullPolicy, auth authn.Keychain) (*image.Image, error)
	Layers(ctx context.Context, ref string) ([]v1.Layer, error)
	Open(ctx context.Context, ref string) (v1.Image, error)
}

// Unpacker turns an image's layers into committed snapshots and returns the
// chain ID of the top one (step 11); *overlay.Unpacker satisfies it.
type Unpacker interface {
	Unpack(ctx context.Context, layers []overlay.Layer) (string, error)
}

// Cgroups is the cgroup stage (step 8) as the kubelet uses it; every
// cgroups.Manager satisfies it. When it also has
// ContainerResources(*corev1.Container) *specs.LinuxResources (like
// *cgroups.Tree) that maps container limits; otherwise the kubelet uses
// cgroups.ContainerResources with CFS quotas on.
type Cgroups interface {
	EnsurePod(ctx context.Context, pod *corev1.Pod) (string, error)
	Remove(ctx context.Context, path string) error
}

// Volumes is the volume stage (step 9); *volume.Manager satisfies it.
type Volumes interface {
	Setup(ctx context.Context, pod *corev1.Pod) (map[string]string, error)
	Mounts(pod *corev1.Pod, c *corev1.Container, paths map[string]string) ([]sandbox.Mount, error)
	Teardown(ctx context.Context, podUID types.UID) error
}

// NodeStatus is the node's registration, lease and status loop
// (kubelet/nodestatus). Run blocks until ctx ends.
type NodeStatus interface {
	Run(ctx context.Context) error
}

// Backoff is an exponential back-off as the kubelet's (client-go's
// flowcontrol.Backoff without jitter): the first delay is Initial, each
// next one doubles up to Max, and a failure more than ResetAfter after the
// previous restart starts again from Initial.
type Backoff struct {
	Initial, Max, ResetAfter time.Duration
}

// Defaults of Config.
const (
	DefaultRootDir           = "/var/lib/podkit/kubelet"
	DefaultLogDir            = "/var/log/pods"
	DefaultMaxPods           = 110
	DefaultResyncInterval    = time.Minute
	DefaultRelistInterval    = time.Second
	DefaultRetryInterval     = 2 * time.Second
	DefaultStaticPodInterval = 20 * time.Second
	DefaultStatusWorkers     = 4
)

// DefaultBackoff is Kubernetes' CrashLoopBackOff and image pull back-off:
// 10 s doubling to 5 min, reset after 10 min without failure.
var DefaultBackoff = Backoff{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 10 * time.Minute}

// Config holds a Kubelet's collaborators and settings. NodeName, Client and
// Runtime are required; everything else has a default or is optional.
type Config struct {
	// NodeName is the node this kubelet runs pods for (spec.nodeName).
	NodeName string
	// Client talks to the API server.
	Client kubernetes.Interface
	// Runtime runs sandboxes and containers. When it is also a
	// sandbox.Execer, exec probes and hooks work; when it is a
	// sandbox.EventSource, exits are noticed at once instead of at the
	// next relist.
	Runtime sandbox.SandboxRunner
	// Images pulls and reads images; nil starts containers without an
	// image (the runtime gets only the image name), which suits fakes.
	Images Images
	// Snapshots prepares each container's writable rootfs over the
	// unpacked image; nil gives containers no rootfs mounts.
	Snapshots overlay.Snapshotter
	// Unpacker unpacks layers into Snapshots; nil builds an
	// overlay.Unpacker when Snapshots is an overlay.SnapshotStatter.
	Unpacker Unpacker
	// Cgroups creates pod cgroups; nil runs pods without.
	Cgroups Cgroups
	// Volumes sets pod volumes up; nil builds a *volume.Manager over
	// RootDir/pods with Client and a TokenRequester.
	Volumes Volumes
	// NodeStatus, when set, runs alongside the kubelet (registration,
	// lease, node status); Run fails when it fails.
	NodeStatus NodeStatus
	// RootDir holds pod directories (RootDir/pods/<uid>).
	RootDir string
	// LogDir holds container logs (LogDir/<ns>_<name>_<uid>/<container>/<n>.log).
	LogDir string
	// DNS is the node's DNS setup for pods' resolv.conf.
	DNS cni.NodeDNS
	// NodeHostname is the node's hostname, seen by host-network pods
	// (os.Hostname by default).
	NodeHostname string
	// HostsFile is the node's hosts file, the base of host-network pods'
	// /etc/hosts ("/etc/hosts" by default).
	HostsFile string
	// NodeIPs are the node's addresses (status.hostIPs); when empty the
	// Node object's InternalIP addresses are used.
	NodeIPs []netip.Addr
	// StaticPodDir is watched for static pod manifests; empty: none.
	StaticPodDir string
	// StaticPodInterval is how often StaticPodDir is read again.
	StaticPodInterval time.Duration
	// MaxPods is the most pods admitted at once.
	MaxPods int
	// ImagePullBackOff and CrashLoopBackOff are the back-offs of failed
	// pulls and of restarts (DefaultBackoff when zero).
	ImagePullBackOff, CrashLoopBackOff Backoff
	// ResyncInterval is how often every pod is synced without news.
	ResyncInterval time.Duration
	// RelistInterval is how often the runtime is listed (PLEG).
	RelistInterval time.Duration
	// RetryInterval is how soon a sync that failed (a volume, the
	// sandbox, an image pull) is tried again.
	RetryInterval time.Duration
	// StatusWorkers is how many pod statuses are written at once.
	StatusWorkers int
	// AppArmorRoot is where the kernel's AppArmor files are read
	// ("/sys"): module/apparmor/parameters/enabled and
	// kernel/security/apparmor/profiles.
	AppArmorRoot string
	// Clock is the time source (clock.RealClock by default).
	Clock clock.WithTicker
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Registerer, when set, gets the kubelet's metrics.
	Registerer prometheus.Registerer
	// ProberOptions are added to the probe manager's options (after the
	// clock and logger).
	ProberOptions []prober.Option
	// NetworkTimer, when it wraps the runtime's Networker, splits the
	// birth trace's sandbox and network steps (see NewNetworkTimer).
	NetworkTimer *NetworkTimer
}

// ErrInvalidConfig reports a Config that cannot work.
var ErrInvalidConfig = errors.New("invalid kubelet configuration")

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.NodeName == "":
		return cfg, fmt.Errorf("%w: NodeName is required", ErrInvalidConfig)
	case cfg.Client == nil:
		return cfg, fmt.Errorf("%w: Client is required", ErrInvalidConfig)
	case cfg.Runtime == nil:
		return cfg, fmt.Errorf("%w: Runtime is required", ErrInvalidConfig)
	}
	if cfg.RootDir == "" {
		cfg.RootDir = DefaultRootDir
	}
	if cfg.LogDir == "" {
		cfg.LogDir = DefaultLogDir
	}
	for _, d := range []string{cfg.RootDir, cfg.LogDir} {
		if !filepath.IsAbs(d) {
			return cfg, fmt.Errorf("%w: directory %q is not absolute", ErrInvalidConfig, d)
		}
	}
	if cfg.NodeHostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return cfg, fmt.Errorf("reading the node's hostname: %w", err)
		}
		cfg.NodeHostname = h
	}
	if cfg.HostsFile == "" {
		cfg.HostsFile = "/etc/hosts"
	}
	if cfg.AppArmorRoot == "" {
		cfg.AppArmorRoot = "/sys"
	}
	if cfg.StaticPodInterval <= 0 {
		cfg.StaticPodInterval = DefaultStaticPodInterval
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	for _, b := range []*Backoff{&cfg.ImagePullBackOff, &cfg.CrashLoopBackOff} {
		if *b == (Backoff{}) {
			*b = DefaultBackoff
		}
		if b.Initial <= 0 || b.Max < b.Initial {
			return cfg, fmt.Errorf("%w: back-off %+v", ErrInvalidConfig, *b)
		}
		if b.ResetAfter <= 0 {
			b.ResetAfter = 2 * b.Max
		}
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.RelistInterval <= 0 {
		cfg.RelistInterval = DefaultRelistInterval
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.StatusWorkers <= 0 {
		cfg.StatusWorkers = DefaultStatusWorkers
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Unpacker == nil {
		if ss, ok := cfg.Snapshots.(overlay.SnapshotStatter); ok {
			cfg.Unpacker = overlay.NewUnpacker(ss, cfg.Logger)
		}
	}
	return cfg, nil
}

// Compile-time checks that podkit's stages fit the kubelet's interfaces.
var (
	_ Images   = (*image.Service)(nil)
	_ Unpacker = (*overlay.Unpacker)(nil)
	_ Cgroups  = (cgroups.Manager)(nil)
	_ Volumes  = (*volume.Manager)(nil)
)
