package cni

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	ipamLockFile = "lock"
	ipamLastFile = "last_reserved_ip.0"
	ipamLineSep  = "\r\n"
)

// IPAM hands out addresses of one subnet the way CNI's host-local plugin
// does, with its on-disk layout: one file per allocated address, named by
// the address and holding "<containerID>\r\n<ifname>", a last_reserved_ip.0
// file so allocation continues round-robin after the last address given
// (released addresses are reused once the range wraps), and a lock file
// flock'ed around every change. It is therefore safe across goroutines,
// across processes sharing the directory, and across restarts.
//
// The lock file also holds a generation number that every writer bumps
// before it changes anything, so a process re-reads the directory only
// when another one changed it since its last look. The directory therefore
// belongs to IPAM: files written behind its back by other tools are seen
// only after the next change made through an IPAM.
type IPAM struct {
	dir     string
	subnet  netip.Prefix
	gateway netip.Addr
	start   netip.Addr
	end     netip.Addr
	mu      sync.Mutex // serialises this process; the flock serialises processes
	cache   ipamCache  // guarded by mu
}

// Allocation is one address held by an attachment.
type Allocation struct {
	IP          netip.Addr
	ContainerID string
	IfName      string
}

// IPAMOption customises an IPAM.
type IPAMOption func(*IPAM) error

// WithGateway sets the gateway address (default: the subnet's first host
// address). It is never allocated.
func WithGateway(gw netip.Addr) IPAMOption {
	return func(p *IPAM) error {
		if !p.subnet.Contains(gw) {
			return fmt.Errorf("gateway %s is outside %s", gw, p.subnet)
		}
		p.gateway = gw
		return nil
	}
}

// WithRange limits allocation to start..end inclusive, both inside the
// subnet (default: every host address of the subnet but the gateway).
func WithRange(start, end netip.Addr) IPAMOption {
	return func(p *IPAM) error {
		if !p.subnet.Contains(start) || !p.subnet.Contains(end) || end.Less(start) {
			return fmt.Errorf("range %s-%s is not an ordered range inside %s", start, end, p.subnet)
		}
		p.start, p.end = start, end
		return nil
	}
}

// NewIPAM returns an allocator for subnet keeping its state in dir (created
// if missing). IPv4 subnets need at least 4 addresses (/30), IPv6 ones /126.
func NewIPAM(dir string, subnet netip.Prefix, opts ...IPAMOption) (*IPAM, error) {
	if !subnet.IsValid() {
		return nil, fmt.Errorf("ipam: invalid subnet %s", subnet)
	}
	subnet = subnet.Masked()
	if subnet.Bits() > subnet.Addr().BitLen()-2 {
		return nil, fmt.Errorf("ipam: subnet %s is too small", subnet)
	}
	p := &IPAM{dir: dir, subnet: subnet}
	p.gateway = subnet.Addr().Next()
	p.start = p.gateway
	p.end = lastAddr(subnet)
	if subnet.Addr().Is4() {
		p.end = p.end.Prev() // broadcast
	}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, fmt.Errorf("ipam: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ipam: create state dir: %w", err)
	}
	return p, nil
}

// Subnet returns the subnet addresses come from.
func (p *IPAM) Subnet() netip.Prefix { return p.subnet }

// Gateway returns the gateway address, which is never allocated.
func (p *IPAM) Gateway() netip.Addr { return p.gateway }

// Range returns the first and last allocatable address.
func (p *IPAM) Range() (netip.Addr, netip.Addr) { return p.start, p.end }

// Allocate returns the address held by (containerID, ifName), reserving the
// next free one when it holds none. Errors wrap ErrRangeExhausted when the
// range is full.
func (p *IPAM) Allocate(ctx context.Context, containerID, ifName string) (netip.Addr, error) {
	var got netip.Addr
	err := p.locked(ctx, func(tx *ipamTx) error {
		if ip, ok := tx.owned(containerID, ifName); ok {
			got = ip
			return nil
		}
		next := p.start
		if last, err := p.readLast(); err == nil && p.inRange(last) && last != p.end {
			next = last.Next()
		}
		for ip, first := next, true; first || ip != next; first = false {
			if err := ctx.Err(); err != nil {
				return err
			}
			if ip != p.gateway && !tx.used(ip) {
				ok, err := tx.reserve(ip, containerID, ifName)
				if err != nil {
					return err
				}
				if ok {
					got = ip
					return p.writeLast(ip)
				}
			}
			if ip == p.end {
				ip = p.start
			} else {
				ip = ip.Next()
			}
		}
		return fmt.Errorf("range %s-%s of %s has no free address for %s/%s: %w",
			p.start, p.end, p.subnet, containerID, ifName, ErrRangeExhausted)
	})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ipam: allocate: %w", err)
	}
	return got, nil
}

// Release frees every address held by (containerID, ifName). Releasing
// nothing is not an error.
func (p *IPAM) Release(ctx context.Context, containerID, ifName string) error {
	err := p.locked(ctx, func(tx *ipamTx) error {
		for _, a := range tx.all() {
			if a.owns(containerID, ifName) {
				if err := tx.free(a.IP); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ipam: release %s/%s: %w", containerID, ifName, err)
	}
	return nil
}

// Lookup returns the address held by (containerID, ifName), if any.
func (p *IPAM) Lookup(ctx context.Context, containerID, ifName string) (netip.Addr, bool, error) {
	var got netip.Addr
	var ok bool
	err := p.locked(ctx, func(tx *ipamTx) error {
		got, ok = tx.owned(containerID, ifName)
		return nil
	})
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("ipam: lookup: %w", err)
	}
	return got, ok, nil
}

// Allocations lists every address currently held, in address order.
func (p *IPAM) Allocations(ctx context.Context) ([]Allocation, error) {
	var out []Allocation
	err := p.locked(ctx, func(tx *ipamTx) error {
		out = tx.all()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ipam: list: %w", err)
	}
	return out, nil
}

func (a Allocation) owns(containerID, ifName string) bool {
	return a.ContainerID == containerID && (a.IfName == "" || a.IfName == ifName)
}

func (p *IPAM) inRange(ip netip.Addr) bool {
	return ip.BitLen() == p.start.BitLen() && !ip.Less(p.start) && !p.end.Less(ip)
}

func (p *IPAM) readLast() (netip.Addr, error) {
	data, err := os.ReadFile(filepath.Join(p.dir, ipamLastFile))
	if err != nil {
		return netip.Addr{}, err
	}
	return netip.ParseAddr(strings.TrimSpace(string(data)))
}

// writeLast records the last address given, in place as host-local does
// (a torn write only makes the next search start over).
func (p *IPAM) writeLast(ip netip.Addr) error {
	return os.WriteFile(filepath.Join(p.dir, ipamLastFile), []byte(ip.String()), 0o600)
}

// lastAddr returns the highest address of prefix.
func lastAddr(prefix netip.Prefix) netip.Addr {
	b := prefix.Masked().Addr().AsSlice()
	bits := prefix.Bits()
	for i := range b {
		hostBits := 8 - min(8, max(0, bits-8*i))
		b[i] |= byte(1<<hostBits - 1)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
