package servicealloc

import (
	"context"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
)

// Txn is the allocation side of one Service write: the values it reserved
// and those the previous version of the Service held that the write gives
// up. Commit after the write is stored, Revert when it fails; both are
// idempotent and a nil Txn does nothing. A dry-run Txn reserved nothing.
type Txn struct {
	a     *Allocator
	dry   bool
	owner types.NamespacedName // the Service: owner of the claims (Config.Claims)

	ips   []netip.Addr // reserved: released by Revert
	ports []int

	releaseIPs   []netip.Addr // held before: released by Commit
	releasePorts []int

	// dry runs: values chosen by this Txn without reserving them
	takenIPs   map[netip.Addr]bool
	takenPorts map[int]bool

	done bool
}

// Commit makes the write's changes final: what the old version held and
// the new one does not is released.
func (t *Txn) Commit() {
	if t != nil {
		t.finish(t.releaseIPs, t.releasePorts)
	}
}

// Revert gives back what the Txn reserved.
func (t *Txn) Revert() {
	if t != nil {
		t.finish(t.ips, t.ports)
	}
}

// finish ends the Txn once, releasing ips and ports (nothing on a dry run).
func (t *Txn) finish(ips []netip.Addr, ports []int) {
	if t.done {
		return
	}
	t.done = true
	if t.dry {
		return
	}
	if t.a.claims != nil {
		t.a.unclaim(t.owner, ips, ports)
		return
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	for _, ip := range ips {
		t.a.ips.Release(ip)
		t.a.touchIP(ip)
	}
	for _, p := range ports {
		t.a.ports.Release(p)
		t.a.touchPort(p)
	}
}

// Reserved returns the cluster IPs and node ports the Txn reserved (or, in
// a dry run, would have).
func (t *Txn) Reserved() ([]netip.Addr, []int) {
	if t == nil {
		return nil, nil
	}
	if t.dry {
		var ips []netip.Addr
		for ip := range t.takenIPs {
			ips = append(ips, ip)
		}
		var ports []int
		for p := range t.takenPorts {
			ports = append(ports, p)
		}
		return ips, ports
	}
	return t.ips, t.ports
}

func (t *Txn) reserveIP(ctx context.Context, ip netip.Addr) error {
	if t.dry {
		if t.takenIPs[ip] {
			return ErrIPAllocated
		}
		if err := t.a.ips.Check(ip); err != nil {
			return err
		}
		t.takenIPs[ip] = true
		return nil
	}
	if t.a.claims != nil {
		return t.claimIP(ctx, ip)
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	if err := t.a.ips.Allocate(ip); err != nil {
		return err
	}
	t.a.touchIP(ip)
	t.ips = append(t.ips, ip)
	return nil
}

func (t *Txn) nextIP(ctx context.Context) (netip.Addr, error) {
	if t.dry {
		ip, err := t.a.ips.peek(func(ip netip.Addr) bool { return t.takenIPs[ip] })
		if err == nil {
			t.takenIPs[ip] = true
		}
		return ip, err
	}
	if t.a.claims != nil {
		return t.claimNextIP(ctx)
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	ip, err := t.a.ips.AllocateNext()
	if err != nil {
		return ip, err
	}
	t.a.touchIP(ip)
	t.ips = append(t.ips, ip)
	return ip, nil
}

func (t *Txn) reservePort(ctx context.Context, p int) error {
	if t.dry {
		if t.takenPorts[p] {
			return ErrPortAllocated
		}
		if err := t.a.ports.Check(p); err != nil {
			return err
		}
		t.takenPorts[p] = true
		return nil
	}
	if t.a.claims != nil {
		return t.claimPort(ctx, p)
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	if err := t.a.ports.Allocate(p); err != nil {
		return err
	}
	t.a.touchPort(p)
	t.ports = append(t.ports, p)
	return nil
}

func (t *Txn) nextPort(ctx context.Context) (int, error) {
	if t.dry {
		p, err := t.a.ports.peek(func(p int) bool { return t.takenPorts[p] })
		if err == nil {
			t.takenPorts[p] = true
		}
		return p, err
	}
	if t.a.claims != nil {
		return t.claimNextPort(ctx)
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	p, err := t.a.ports.AllocateNext()
	if err != nil {
		return p, err
	}
	t.a.touchPort(p)
	t.ports = append(t.ports, p)
	return p, nil
}
