package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/cni/netns"
)

// Defaults of Config.
const (
	// DefaultTable names the proxy's nftables table (family ip). It is not
	// "podkit": the cni bridge's masquerade table already has that name,
	// and both the bridge (which recreates its table) and the proxy (which
	// deletes its table on shutdown) own their table outright.
	DefaultTable = "podkit-proxy"
	// DefaultSyncPeriod is the period of full resyncs.
	DefaultSyncPeriod = 30 * time.Second
	// DefaultMasqueradeMark is the packet mark bit that asks for SNAT in
	// postrouting (kube-proxy's default bit 14).
	DefaultMasqueradeMark uint32 = 1 << 14
	// retryPeriod bounds the wait before retrying a failed sync.
	retryPeriod = time.Second
	// maxNameLen is the kernel's limit on table, chain and set names
	// (NFT_NAME_MAXLEN, including the terminating NUL).
	maxNameLen = 255
)

// ErrConfig is wrapped by New for an invalid Config.
var ErrConfig = errors.New("invalid proxy config")

// ErrRunning is returned by a second concurrent Run.
var ErrRunning = errors.New("proxy already running")

// Config configures a Proxier. Client and NodeName are required.
type Config struct {
	// Client reads Services and EndpointSlices.
	Client kubernetes.Interface
	// Informers, if set, is the factory to take the Service and
	// EndpointSlice informers from (shared with other components, such as
	// the dns server). Run starts it; informers it starts stop when Run
	// returns. Default: a new factory over Client, shut down when Run
	// returns.
	Informers informers.SharedInformerFactory
	// NodeName is this node's name: endpoints on it are the local ones
	// (internalTrafficPolicy: Local).
	NodeName string
	// Table names the nftables table (family ip) the proxy owns
	// (default DefaultTable). Nothing else may write to it.
	Table string
	// ClusterCIDR is the pod CIDR of the whole cluster. Traffic to a
	// ClusterIP from a source outside it is masqueraded; the zero prefix
	// turns that off (only hairpin traffic is then masqueraded).
	ClusterCIDR netip.Prefix
	// NetNS programs the rules in the network namespace at this path; ""
	// means the caller's. Tests point it at a throwaway namespace standing
	// in for the host.
	NetNS string
	// MinSyncPeriod is the least time between two syncs: changes arriving
	// meanwhile are coalesced into one batch (default 0: sync as soon as
	// possible, still batching everything pending).
	MinSyncPeriod time.Duration
	// SyncPeriod is the period of full resyncs, which rewrite every chain
	// and repair any drift (default DefaultSyncPeriod).
	SyncPeriod time.Duration
	// MasqueradeMark is the single mark bit asking for SNAT (default
	// DefaultMasqueradeMark).
	MasqueradeMark uint32
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock drives the sync timers (default the real clock).
	Clock clock.Clock
	// Registerer registers the proxy's metrics; nil keeps them
	// unregistered.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is required", ErrConfig)
	}
	if c.NodeName == "" {
		return fmt.Errorf("%w: NodeName is required", ErrConfig)
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if len(c.Table) > maxNameLen || strings.ContainsAny(c.Table, " \t\n\x00") {
		return fmt.Errorf("%w: table name %q is not a valid nftables name", ErrConfig, c.Table)
	}
	if c.ClusterCIDR.IsValid() {
		if !c.ClusterCIDR.Addr().Is4() {
			return fmt.Errorf("%w: ClusterCIDR %s is not IPv4 (the proxy programs family ip only)", ErrConfig, c.ClusterCIDR)
		}
		c.ClusterCIDR = c.ClusterCIDR.Masked()
	}
	if c.NetNS != "" {
		if err := netns.Check(c.NetNS); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if c.MinSyncPeriod < 0 {
		return fmt.Errorf("%w: MinSyncPeriod %s is negative", ErrConfig, c.MinSyncPeriod)
	}
	switch {
	case c.SyncPeriod == 0:
		c.SyncPeriod = DefaultSyncPeriod
	case c.SyncPeriod < 0:
		return fmt.Errorf("%w: SyncPeriod %s is negative", ErrConfig, c.SyncPeriod)
	}
	if c.MasqueradeMark == 0 {
		c.MasqueradeMark = DefaultMasqueradeMark
	}
	if c.MasqueradeMark&(c.MasqueradeMark-1) != 0 {
		return fmt.Errorf("%w: MasqueradeMark %#x is not a single bit", ErrConfig, c.MasqueradeMark)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}
