package servicealloc

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// MaxHostBits bounds a cluster IP range to 2^20 addresses (a /12 for IPv4,
// a /108 for IPv6), as kube-apiserver bounds --service-cluster-ip-range: the
// bitmap of a /12 takes 128 KiB.
const MaxHostBits = 20

// IPRange allocates the addresses of one CIDR. The network address and, for
// IPv4, the broadcast address are never handed out. It is safe for
// concurrent use.
type IPRange struct {
	prefix netip.Prefix
	first  netip.Addr // network address + 1: slot 0

	mu   sync.Mutex
	bits *bitmap
	rand *rand.Rand
}

// NewIPRange returns an empty range over prefix (masked to its network).
func NewIPRange(prefix netip.Prefix, opts ...Option) (*IPRange, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return newIPRange(prefix, seedFrom(o.source))
}

func newIPRange(prefix netip.Prefix, r *rand.Rand) (*IPRange, error) {
	if !prefix.IsValid() {
		return nil, fmt.Errorf("service IP range %q: %w", prefix, ErrInvalidRange)
	}
	prefix = prefix.Masked()
	hostBits := prefix.Addr().BitLen() - prefix.Bits()
	if hostBits > MaxHostBits {
		return nil, fmt.Errorf("service IP range %s is too large: at most %d host bits (a /%d for IPv4, /%d for IPv6): %w",
			prefix, MaxHostBits, 32-MaxHostBits, 128-MaxHostBits, ErrInvalidRange)
	}
	total := 1 << hostBits
	usable := total - 1 // the network address
	if prefix.Addr().Is4() {
		usable-- // the broadcast address
	}
	if usable < 1 {
		return nil, fmt.Errorf("service IP range %s has no usable address: %w", prefix, ErrInvalidRange)
	}
	return &IPRange{
		prefix: prefix,
		first:  prefix.Addr().Next(),
		bits:   newBitmap(usable, staticBand(total, 16, 16, 256)),
		rand:   r,
	}, nil
}

// staticBand sizes the lower band reserved for static allocation:
// total/step, clamped to [min, max], and none for ranges of at most min
// values — Kubernetes' formula (16/16/256 for IPs, 16/32/128 for ports).
func staticBand(total, minimum, step, maximum int) int {
	if total <= minimum {
		return 0
	}
	return min(max(total/step, minimum), maximum)
}

// Prefix returns the range's CIDR.
func (r *IPRange) Prefix() netip.Prefix { return r.prefix }

// Family returns the range's IP family.
func (r *IPRange) Family() corev1.IPFamily {
	if r.prefix.Addr().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// First returns the first usable address (10.96.0.1 in 10.96.0.0/12), the
// `kubernetes` service's cluster IP.
func (r *IPRange) First() netip.Addr { return r.first }

// Size is the number of allocatable addresses.
func (r *IPRange) Size() int { return r.bits.size }

// StaticSize is the number of addresses in the lower, static band, which
// dynamic allocation uses last.
func (r *IPRange) StaticSize() int { return r.bits.static }

// Used returns the number of allocated addresses.
func (r *IPRange) Used() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits.used
}

// Free returns the number of addresses left.
func (r *IPRange) Free() int { return r.Size() - r.Used() }

// Contains reports whether ip is an allocatable address of the range.
func (r *IPRange) Contains(ip netip.Addr) bool {
	_, ok := r.slot(ip)
	return ok
}

func (r *IPRange) slot(ip netip.Addr) (int, bool) {
	if !ip.IsValid() || !r.prefix.Contains(ip) {
		return 0, false
	}
	a, f := ip.As16(), r.first.As16()
	// At most 20 host bits: the offset lives in the low 32 bits.
	d := int64(binary.BigEndian.Uint32(a[12:])) - int64(binary.BigEndian.Uint32(f[12:]))
	if d < 0 || d >= int64(r.bits.size) {
		return 0, false
	}
	return int(d), true
}

func (r *IPRange) addr(slot int) netip.Addr {
	a := r.first.As16()
	binary.BigEndian.PutUint32(a[12:], binary.BigEndian.Uint32(a[12:])+uint32(slot))
	ip := netip.AddrFrom16(a)
	if r.prefix.Addr().Is4() {
		ip = ip.Unmap()
	}
	return ip
}

func (r *IPRange) notInRange(ip netip.Addr) error {
	return &RangeError{Value: ip.String(), Range: r.prefix.String()}
}

// Allocate reserves ip: a *RangeError when it is outside the range,
// ErrIPAllocated when it is taken.
func (r *IPRange) Allocate(ip netip.Addr) error {
	i, ok := r.slot(ip)
	if !ok {
		return r.notInRange(ip)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.bits.set(i) {
		return ErrIPAllocated
	}
	return nil
}

// Check reports what Allocate(ip) would, without reserving (dry runs).
func (r *IPRange) Check(ip netip.Addr) error {
	i, ok := r.slot(ip)
	if !ok {
		return r.notInRange(ip)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bits.has(i) {
		return ErrIPAllocated
	}
	return nil
}

// AllocateNext reserves a free address, chosen at random in the upper band
// and in the lower, static band only when the upper one is full; ErrFull
// when none is left.
func (r *IPRange) AllocateNext() (netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.bits.pick(r.rand, nil)
	if !ok {
		return netip.Addr{}, ErrFull
	}
	r.bits.set(i)
	return r.addr(i), nil
}

// peek chooses the address AllocateNext could, without reserving it, and
// skipping those skip names (dry runs).
func (r *IPRange) peek(skip func(netip.Addr) bool) (netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var skipSlot func(int) bool
	if skip != nil {
		skipSlot = func(i int) bool { return skip(r.addr(i)) }
	}
	i, ok := r.bits.pick(r.rand, skipSlot)
	if !ok {
		return netip.Addr{}, ErrFull
	}
	return r.addr(i), nil
}

// Release frees ip; false when it was not allocated or is outside the
// range.
func (r *IPRange) Release(ip netip.Addr) bool {
	i, ok := r.slot(ip)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits.clear(i)
}

// Has reports whether ip is allocated.
func (r *IPRange) Has(ip netip.Addr) bool {
	i, ok := r.slot(ip)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits.has(i)
}

// Allocated returns the allocated addresses in increasing order.
func (r *IPRange) Allocated() []netip.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]netip.Addr, 0, r.bits.used)
	r.bits.forEach(func(i int) { out = append(out, r.addr(i)) })
	return out
}

// reset frees every address.
func (r *IPRange) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bits.reset()
}
