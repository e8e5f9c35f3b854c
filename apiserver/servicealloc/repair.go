package servicealloc

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LeakThreshold is how many consecutive repairs must find a value
// allocated with no stored owner before it is released. A create reserves
// its cluster IP before the Service is stored, so a repair listing in
// between sees an owner-less value; only one that stays so across repairs
// (minutes apart) has leaked. Kubernetes' repair controllers use 3.
const LeakThreshold = 3

// DefaultRepairInterval is how often RunRepair runs, as kube-apiserver's
// repair loops.
const DefaultRepairInterval = 3 * time.Minute

// Report is what Sync or Repair found in the stored Services.
type Report struct {
	// Services is the number of Services listed.
	Services int
	// AddedIPs and AddedPorts were held by stored Services but not
	// allocated here (another API server allocated them, or a release ran
	// ahead of a failed delete): they are allocated now. With Claims:
	// values whose record was missing, created now.
	AddedIPs   []netip.Addr
	AddedPorts []int
	// ReleasedIPs and ReleasedPorts had no stored owner for LeakThreshold
	// repairs in a row and were released (with Claims: their records
	// deleted).
	ReleasedIPs   []netip.Addr
	ReleasedPorts []int
	// DuplicateIPs and DuplicatePorts are held by more than one Service:
	// the data was written around the allocator (or by two API servers
	// before a repair). They stay allocated; one Service must be fixed.
	DuplicateIPs   map[netip.Addr][]types.NamespacedName
	DuplicatePorts map[int][]types.NamespacedName
	// OutOfRangeIPs and OutOfRangePorts are held by stored Services but lie
	// outside the configured ranges (the ranges changed): they are kept by
	// their Services and never handed out.
	OutOfRangeIPs   map[string]types.NamespacedName
	OutOfRangePorts map[int]types.NamespacedName
}

// held is the allocation state the stored Services imply.
type held struct {
	Report
	ips   map[netip.Addr][]types.NamespacedName
	ports map[int][]types.NamespacedName
}

func collect(a *Allocator, svcs []*corev1.Service) *held {
	h := &held{ips: map[netip.Addr][]types.NamespacedName{}, ports: map[int][]types.NamespacedName{}}
	h.Services = len(svcs)
	for _, svc := range svcs {
		owner := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		for _, ip := range heldIPs(svc) {
			if !a.ips.Contains(ip) {
				if h.OutOfRangeIPs == nil {
					h.OutOfRangeIPs = map[string]types.NamespacedName{}
				}
				h.OutOfRangeIPs[ip.String()] = owner
				continue
			}
			h.ips[ip] = append(h.ips[ip], owner)
		}
		for _, p := range heldPorts(svc) {
			if !a.ports.Contains(p) {
				if h.OutOfRangePorts == nil {
					h.OutOfRangePorts = map[int]types.NamespacedName{}
				}
				h.OutOfRangePorts[p] = owner
				continue
			}
			h.ports[p] = append(h.ports[p], owner)
		}
	}
	for ip, owners := range h.ips {
		if len(owners) > 1 {
			if h.DuplicateIPs == nil {
				h.DuplicateIPs = map[netip.Addr][]types.NamespacedName{}
			}
			h.DuplicateIPs[ip] = owners
		}
	}
	for p, owners := range h.ports {
		if len(owners) > 1 {
			if h.DuplicatePorts == nil {
				h.DuplicatePorts = map[int][]types.NamespacedName{}
			}
			h.DuplicatePorts[p] = owners
		}
	}
	return h
}

// log reports what needs an operator's attention.
func (r *Report) log(log *slog.Logger, what string) {
	for ip, owners := range r.DuplicateIPs {
		log.Warn(what+": cluster IP held by several services", "ip", ip, "services", owners)
	}
	for p, owners := range r.DuplicatePorts {
		log.Warn(what+": node port held by several services", "port", p, "services", owners)
	}
	for ip, owner := range r.OutOfRangeIPs {
		log.Warn(what+": cluster IP outside the service cluster IP range", "ip", ip, "service", owner)
	}
	for p, owner := range r.OutOfRangePorts {
		log.Warn(what+": node port outside the node port range", "port", p, "service", owner)
	}
	if len(r.AddedIPs)+len(r.AddedPorts) > 0 {
		log.Info(what+": allocated values held by stored services", "ips", r.AddedIPs, "ports", r.AddedPorts)
	}
	if len(r.ReleasedIPs)+len(r.ReleasedPorts) > 0 {
		log.Warn(what+": released leaked values", "ips", r.ReleasedIPs, "ports", r.ReleasedPorts)
	}
}

// Repair compares the allocation state with the stored Services, as
// Kubernetes' ipallocator and portallocator repair controllers do: values a
// stored Service holds become allocated, and values allocated without a
// stored owner are released once LeakThreshold repairs in a row found them
// so. Changes made while the Services are listed are left alone. Before
// Sync it runs Sync. Safe to call concurrently with allocations.
func (a *Allocator) Repair(ctx context.Context) (*Report, error) {
	if !a.synced.Load() {
		return &Report{}, a.Sync(ctx)
	}
	if a.claims != nil {
		a.repairMu.Lock()
		defer a.repairMu.Unlock()
		r, err := a.repairClaims(ctx)
		if err != nil {
			return nil, err
		}
		r.log(a.log, "repairing service allocations")
		return r, nil
	}
	if a.list == nil {
		return &Report{}, nil
	}
	a.repairMu.Lock()
	defer a.repairMu.Unlock()

	a.mu.Lock()
	a.repairing = true
	a.dirtyIPs, a.dirtyPorts = map[netip.Addr]bool{}, map[int]bool{}
	a.mu.Unlock()
	svcs, err := a.list(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.repairing = false
	if err != nil {
		return nil, fmt.Errorf("servicealloc: repair: listing services: %w", err)
	}
	h := collect(a, svcs)
	r := &h.Report
	r.AddedIPs, r.ReleasedIPs = repairRange[netip.Addr](a.ips, h.ips, a.dirtyIPs, a.leakedIPs)
	r.AddedPorts, r.ReleasedPorts = repairRange[int](a.ports, h.ports, a.dirtyPorts, a.leakedPorts)
	a.dirtyIPs, a.dirtyPorts = nil, nil
	r.log(a.log, "repairing service allocations")
	return r, nil
}

// valueRange is what Repair needs of IPRange and PortRange.
type valueRange[V comparable] interface {
	Allocate(V) error
	Release(V) bool
	Has(V) bool
	Allocated() []V
}

// repairRange reconciles one range with the values stored Services hold.
func repairRange[V comparable](r valueRange[V], stored map[V][]types.NamespacedName, dirty map[V]bool, leaked map[V]int) (added, released []V) {
	for v := range stored {
		delete(leaked, v)
		if !dirty[v] && r.Allocate(v) == nil {
			added = append(added, v)
		}
	}
	for v := range leaked {
		if !r.Has(v) || dirty[v] {
			delete(leaked, v)
		}
	}
	for _, v := range r.Allocated() {
		if _, ok := stored[v]; ok || dirty[v] {
			continue
		}
		leaked[v]++
		if leaked[v] >= LeakThreshold {
			r.Release(v)
			delete(leaked, v)
			released = append(released, v)
		}
	}
	return added, released
}

// RunRepair runs Repair every interval (DefaultRepairInterval when zero or
// negative) until ctx is done, logging failures.
func (a *Allocator) RunRepair(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultRepairInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := a.Repair(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("repairing service allocations", "err", err)
			}
		}
	}
}
