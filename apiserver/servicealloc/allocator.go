package servicealloc

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Defaults, as kube-apiserver's --service-cluster-ip-range (kubeadm's
// default) and --service-node-port-range.
var (
	DefaultClusterIPRange = netip.MustParsePrefix("10.96.0.0/12")
	DefaultNodePortRange  = utilnet.PortRange{Base: 30000, Size: 2768}
)

// ListFunc returns every stored Service, in all namespaces.
type ListFunc func(ctx context.Context) ([]*corev1.Service, error)

// Config configures an Allocator.
type Config struct {
	// ClusterIPRange is the CIDR cluster IPs come from; the zero value
	// means DefaultClusterIPRange.
	ClusterIPRange netip.Prefix
	// NodePortRange is where node ports come from; a zero Size means
	// DefaultNodePortRange.
	NodePortRange utilnet.PortRange
	// List reads the stored Services, the source of truth of the
	// allocation state: Sync loads it before the first allocation and
	// Repair compares against it. Nil starts empty with nothing to load.
	List ListFunc
	// Claims, when set, records every allocated value in a store shared
	// by the API servers (StoreClaims): a value is allocated when its
	// record is created, so API servers sharing a store never hand one out
	// twice, and the in-memory ranges only hint at free values. Nil keeps
	// the state in memory alone, derived from the stored Services (one API
	// server per store).
	Claims Claims
	// ReleaseTimeout bounds the store calls releasing values, which
	// Txn.Commit, Txn.Revert and Release make after the request that
	// caused them; default 10s. Repair removes records a failed release
	// left behind.
	ReleaseTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Allocator hands out the cluster IPs and node ports of Services. With
// Config.Claims a value is allocated by creating its record in the shared
// store and memory only hints at free values; without, the state lives in
// memory, derived from the stored Services (Sync, Repair). Reservations
// are made before the Service is written and undone (Txn.Revert) when the
// write fails. It is safe for concurrent use.
type Allocator struct {
	ips   *IPRange
	ports *PortRange
	list  ListFunc
	log   *slog.Logger

	claims         Claims
	releaseTimeout time.Duration
	claimLeaks     map[string]claimLeak // Repair's orphan records; repairMu

	syncMu sync.Mutex
	synced atomic.Bool

	repairMu sync.Mutex // one Repair at a time

	// mu orders every change of the ranges against Repair, which must not
	// act on values changed while it was listing.
	mu          sync.Mutex
	repairing   bool
	dirtyIPs    map[netip.Addr]bool
	dirtyPorts  map[int]bool
	leakedIPs   map[netip.Addr]int
	leakedPorts map[int]int
}

// New returns an Allocator; call Sync (or let the first allocation do it)
// to load the stored Services.
func New(cfg Config, opts ...Option) (*Allocator, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if !cfg.ClusterIPRange.IsValid() {
		cfg.ClusterIPRange = DefaultClusterIPRange
	}
	if cfg.NodePortRange.Size == 0 {
		cfg.NodePortRange = DefaultNodePortRange
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReleaseTimeout <= 0 {
		cfg.ReleaseTimeout = 10 * time.Second
	}
	ips, err := newIPRange(cfg.ClusterIPRange, seedFrom(o.source))
	if err != nil {
		return nil, fmt.Errorf("servicealloc: %w", err)
	}
	ports, err := newPortRange(cfg.NodePortRange, seedFrom(o.source))
	if err != nil {
		return nil, fmt.Errorf("servicealloc: %w", err)
	}
	return &Allocator{
		ips: ips, ports: ports, list: cfg.List, log: cfg.Logger,
		leakedIPs: map[netip.Addr]int{}, leakedPorts: map[int]int{},
		claims: cfg.Claims, releaseTimeout: cfg.ReleaseTimeout, claimLeaks: map[string]claimLeak{},
	}, nil
}

// IPs returns the cluster IP range (for inspection: allocate through the
// Allocator so that Repair sees every change).
func (a *Allocator) IPs() *IPRange { return a.ips }

// Ports returns the node port range (for inspection).
func (a *Allocator) Ports() *PortRange { return a.ports }

// Synced reports whether the stored Services have been loaded.
func (a *Allocator) Synced() bool { return a.synced.Load() }

// Sync loads the allocation state from the stored Services once: every
// cluster IP and node port they hold becomes allocated. Allocations wait
// for it, so a restarted API server never hands out a value a stored
// Service holds. Values held twice or outside the ranges are logged (the
// ranges changed, or the data was written around the API server).
func (a *Allocator) Sync(ctx context.Context) error {
	if a.synced.Load() {
		return nil
	}
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	if a.synced.Load() {
		return nil
	}
	if a.claims != nil {
		a.repairMu.Lock()
		defer a.repairMu.Unlock()
		r, err := a.repairClaims(ctx)
		if err != nil {
			return fmt.Errorf("servicealloc: loading allocations: %w", err)
		}
		r.log(a.log, "loading service allocations")
		a.synced.Store(true)
		return nil
	}
	var svcs []*corev1.Service
	if a.list != nil {
		var err error
		if svcs, err = a.list(ctx); err != nil {
			return fmt.Errorf("servicealloc: loading services: %w", err)
		}
	}
	held := collect(a, svcs)
	a.mu.Lock()
	a.ips.reset()
	a.ports.reset()
	for ip := range held.ips {
		_ = a.ips.Allocate(ip)
	}
	for p := range held.ports {
		_ = a.ports.Allocate(p)
	}
	a.mu.Unlock()
	held.log(a.log, "loading service allocations")
	a.synced.Store(true)
	return nil
}

// Release frees what a deleted Service held: its records (Config.Claims),
// or, in memory, its values — before Sync nothing, as the deleted Service
// is no longer in the list Sync loads.
func (a *Allocator) Release(svc *corev1.Service) {
	if svc == nil {
		return
	}
	if a.claims != nil { // the records are there, synced or not
		a.unclaim(ownerOf(svc.Namespace, svc.Name), heldIPs(svc), heldPorts(svc))
		return
	}
	if !a.synced.Load() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range heldIPs(svc) {
		a.ips.Release(ip)
		a.touchIP(ip)
	}
	for _, p := range heldPorts(svc) {
		a.ports.Release(p)
		a.touchPort(p)
	}
}

// touchIP and touchPort record a change made while Repair lists; a.mu is
// held.
func (a *Allocator) touchIP(ip netip.Addr) {
	if a.repairing {
		a.dirtyIPs[ip] = true
	}
}

func (a *Allocator) touchPort(p int) {
	if a.repairing {
		a.dirtyPorts[p] = true
	}
}
