package servicealloc

import (
	"context"
	"errors"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
)

// Allocation with Config.Claims: the records in the shared store decide,
// the in-memory ranges hint. A requested value is claimed in the store
// whatever the hints say (they may be stale: another API server released
// it); a dynamic pick takes a value the hints call free and claims it, and
// a record found there (a "mid-air collision" with another API server)
// marks the value used and moves on to the next. When the hints call the
// range full they are rebuilt from the records once before ErrFull.

// claimIP claims a requested cluster IP for the Txn's Service.
func (t *Txn) claimIP(ctx context.Context, ip netip.Addr) error {
	a := t.a
	if !a.ips.Contains(ip) {
		return a.ips.notInRange(ip)
	}
	a.mu.Lock()
	fresh := a.ips.Allocate(ip) == nil
	a.touchIP(ip)
	a.mu.Unlock()
	err := a.claims.ClaimIP(ctx, ip, t.owner)
	if err == nil {
		t.ips = append(t.ips, ip)
		return nil
	}
	if fresh && !errors.Is(err, ErrIPAllocated) {
		a.mu.Lock()
		a.ips.Release(ip)
		a.mu.Unlock()
	}
	return err
}

// claimNextIP picks and claims a free cluster IP.
func (t *Txn) claimNextIP(ctx context.Context) (netip.Addr, error) {
	a := t.a
	refreshed := false
	for {
		a.mu.Lock()
		ip, err := a.ips.AllocateNext()
		if err == nil {
			a.touchIP(ip)
		}
		a.mu.Unlock()
		if errors.Is(err, ErrFull) && !refreshed {
			refreshed = true
			if err := a.refreshHints(ctx); err != nil {
				return netip.Addr{}, err
			}
			continue
		}
		if err != nil {
			return netip.Addr{}, err
		}
		switch err := a.claims.ClaimIP(ctx, ip, t.owner); {
		case err == nil:
			t.ips = append(t.ips, ip)
			return ip, nil
		case errors.Is(err, ErrIPAllocated):
			a.log.Debug("cluster IP claimed by another API server, trying another", "ip", ip)
		default:
			a.mu.Lock()
			a.ips.Release(ip)
			a.mu.Unlock()
			return netip.Addr{}, err
		}
	}
}

// claimPort claims a requested node port.
func (t *Txn) claimPort(ctx context.Context, p int) error {
	a := t.a
	if !a.ports.Contains(p) {
		return a.ports.notInRange(p)
	}
	a.mu.Lock()
	fresh := a.ports.Allocate(p) == nil
	a.touchPort(p)
	a.mu.Unlock()
	err := a.claims.ClaimPort(ctx, p, t.owner)
	if err == nil {
		t.ports = append(t.ports, p)
		return nil
	}
	if fresh && !errors.Is(err, ErrPortAllocated) {
		a.mu.Lock()
		a.ports.Release(p)
		a.mu.Unlock()
	}
	return err
}

// claimNextPort picks and claims a free node port.
func (t *Txn) claimNextPort(ctx context.Context) (int, error) {
	a := t.a
	refreshed := false
	for {
		a.mu.Lock()
		p, err := a.ports.AllocateNext()
		if err == nil {
			a.touchPort(p)
		}
		a.mu.Unlock()
		if errors.Is(err, ErrFull) && !refreshed {
			refreshed = true
			if err := a.refreshHints(ctx); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		switch err := a.claims.ClaimPort(ctx, p, t.owner); {
		case err == nil:
			t.ports = append(t.ports, p)
			return p, nil
		case errors.Is(err, ErrPortAllocated):
			a.log.Debug("node port claimed by another API server, trying another", "port", p)
		default:
			a.mu.Lock()
			a.ports.Release(p)
			a.mu.Unlock()
			return 0, err
		}
	}
}

// unclaim releases values owner held: their records first (only while
// they are still owner's), then the hints. Failures are logged: Repair
// removes the records they leave behind.
func (a *Allocator) unclaim(owner types.NamespacedName, ips []netip.Addr, ports []int) {
	if len(ips)+len(ports) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.releaseTimeout)
	defer cancel()
	for _, ip := range ips {
		if err := a.claims.ReleaseIP(ctx, ip, Claim{Owner: owner}); err != nil {
			a.log.Warn("releasing a cluster IP", "ip", ip, "service", owner, "err", err)
		}
	}
	for _, p := range ports {
		if err := a.claims.ReleasePort(ctx, p, Claim{Owner: owner}); err != nil {
			a.log.Warn("releasing a node port", "port", p, "service", owner, "err", err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range ips {
		a.ips.Release(ip)
		a.touchIP(ip)
	}
	for _, p := range ports {
		a.ports.Release(p)
		a.touchPort(p)
	}
}

// refreshHints rebuilds the in-memory ranges from the records.
func (a *Allocator) refreshHints(ctx context.Context) error {
	set, err := a.claims.List(ctx)
	if err != nil {
		return err
	}
	a.setHints(set)
	return nil
}

func (a *Allocator) setHints(set *ClaimSet) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ips.reset()
	a.ports.reset()
	for ip := range set.IPs {
		if a.ips.Contains(ip) {
			_ = a.ips.Allocate(ip)
		}
	}
	for p := range set.Ports {
		if a.ports.Contains(p) {
			_ = a.ports.Allocate(p)
		}
	}
}
