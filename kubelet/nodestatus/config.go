package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Defaults, as the kubelet's.
const (
	DefaultMaxPods               = 110
	DefaultMaxImages             = 50
	DefaultKubeletPort           = 10250
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	DefaultLeaseDuration         = 40 * time.Second
	DefaultRenewInterval         = 10 * time.Second
	// DefaultPressureTransitionPeriod is the kubelet's
	// --eviction-pressure-transition-period.
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// DefaultKubeletVersion is node.status.nodeInfo.kubeletVersion: the
	// Kubernetes API level podkit implements.
	DefaultKubeletVersion = "v1.33.0-podkit"
	// DefaultRuntimeVersion is node.status.nodeInfo.containerRuntimeVersion.
	DefaultRuntimeVersion = "podkit://0.1.0"
)

// Config holds the controller's collaborators and settings. Client,
// NodeName and Machine are required.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	// Hostname is the kubernetes.io/hostname label and the Hostname
	// address; defaults to NodeName (as with --hostname-override), so
	// that several podkit nodes on one machine stay distinct topologies.
	Hostname string
	// PodCIDR, when set, is written to spec.podCIDR at registration (and
	// onto an existing node that has none). Empty leaves it to the
	// control plane: PodCIDR() then reports what the Node carries.
	PodCIDR string
	// OnPodCIDR is called whenever the node's pod CIDR becomes known or
	// changes (the network stage configures its range from it).
	OnPodCIDR func(cidr string)
	// Addresses of the node; nil detects an InternalIP from the
	// interfaces (DetectNodeIP, no network traffic). A Hostname address is
	// always added.
	Addresses []corev1.NodeAddress
	Machine   Machine
	// Reserved is kube-reserved plus system-reserved: kept out of
	// allocatable with the hard eviction thresholds.
	Reserved corev1.ResourceList
	// EvictionHard: signal → threshold ("100Mi", "10%"); nil means
	// DefaultEvictionHard(), an empty map none.
	EvictionHard map[string]string
	// PressureTransitionPeriod: how long a pressure condition outlives the
	// last observation of its signal under the threshold. 0 means the
	// default; negative means none.
	PressureTransitionPeriod time.Duration
	// MaxPods is the pods capacity (default 110).
	MaxPods int
	// Images lists the node's images (node.status.images); the MaxImages
	// largest are reported, at most 5 names each.
	Images    func(ctx context.Context) ([]corev1.ContainerImage, error)
	MaxImages int // default 50; negative: all
	// Labels and Taints the node registers with.
	Labels map[string]string
	Taints []corev1.Taint
	// KubeletPort is daemonEndpoints.kubeletEndpoint.port (default 10250).
	KubeletPort int
	// KubeletVersion and RuntimeVersion fill nodeInfo.
	KubeletVersion, RuntimeVersion string
	// Ready reports runtime and network health: nil → Ready=True
	// "kubelet is posting ready status", else Ready=False KubeletNotReady
	// with the error as message. A nil func is always ready.
	Ready func() error
	// StatusUpdateFrequency: how often the status is computed (10s).
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency: how often an unchanged status is posted (5m).
	StatusReportFrequency time.Duration
	// LeaseDuration (40s) and RenewInterval (10s) of the node lease.
	LeaseDuration, RenewInterval time.Duration
	// Recorder, when set, receives the node's events (NodeReady,
	// NodeHasSufficientMemory, ...).
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

// ErrInvalidConfig is wrapped by New's errors.
var ErrInvalidConfig = errors.New("invalid node status configuration")

// defaults fills unset fields and checks the rest.
func (cfg *Config) defaults() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("nodestatus: %w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case cfg.Client == nil:
		return bad("Client is required")
	case cfg.Machine == nil:
		return bad("Machine is required")
	case cfg.NodeName == "":
		return bad("NodeName is required")
	}
	if errs := validation.IsDNS1123Subdomain(cfg.NodeName); len(errs) > 0 {
		return bad("node name %q: %v", cfg.NodeName, errs)
	}
	if cfg.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(cfg.PodCIDR); err != nil {
			return bad("pod CIDR %q: %v", cfg.PodCIDR, err)
		}
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.NodeName
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.MaxPods < 0 {
		return bad("MaxPods %d is negative", cfg.MaxPods)
	}
	if cfg.MaxImages == 0 {
		cfg.MaxImages = DefaultMaxImages
	}
	if cfg.KubeletPort == 0 {
		cfg.KubeletPort = DefaultKubeletPort
	}
	if cfg.KubeletPort < 0 || cfg.KubeletPort > 65535 {
		return bad("KubeletPort %d out of range", cfg.KubeletPort)
	}
	if cfg.KubeletVersion == "" {
		cfg.KubeletVersion = DefaultKubeletVersion
	}
	if cfg.RuntimeVersion == "" {
		cfg.RuntimeVersion = DefaultRuntimeVersion
	}
	if cfg.EvictionHard == nil {
		cfg.EvictionHard = DefaultEvictionHard()
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.StatusUpdateFrequency, DefaultStatusUpdateFrequency}, {&cfg.StatusReportFrequency, DefaultStatusReportFrequency},
		{&cfg.LeaseDuration, DefaultLeaseDuration}, {&cfg.RenewInterval, DefaultRenewInterval}} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return bad("negative interval %s", *d.v)
		}
	}
	if cfg.LeaseDuration < time.Second {
		return bad("LeaseDuration %s is under a second", cfg.LeaseDuration)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// nodeRef is how the kubelet refers to its node in events.
func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}
