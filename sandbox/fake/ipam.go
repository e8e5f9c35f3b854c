package fake

import (
	"fmt"
	"net/netip"
)

// ipam hands out sandbox addresses round robin, like CNI's host-local
// allocator: a released address is reused only once the cursor wraps, so a
// new pod rarely gets the address of one just gone.
type ipam struct {
	prefix      netip.Prefix
	first, last netip.Addr
	// size is how many addresses can be handed out (capped at 1<<62).
	size uint64
	next netip.Addr
	used map[netip.Addr]struct{}
}

func newIPAM(p netip.Prefix) (*ipam, error) {
	p = p.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	// Reserved: the network address and the gateway, and for IPv4 the
	// broadcast address.
	reserved := uint64(2)
	if p.Addr().Is4() {
		reserved = 3
	}
	size := uint64(1) << 62
	if hostBits < 62 {
		total := uint64(1) << hostBits
		if total <= reserved {
			return nil, fmt.Errorf("fake: pod CIDR %s has no address to hand out", p)
		}
		size = total - reserved
	}
	first := p.Addr().Next().Next()
	last := lastAddr(p)
	if p.Addr().Is4() {
		last = last.Prev()
	}
	return &ipam{prefix: p, first: first, last: last, size: size, next: first, used: map[netip.Addr]struct{}{}}, nil
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// allocate returns a free address.
func (m *ipam) allocate() (netip.Addr, error) {
	if uint64(len(m.used)) >= m.size {
		return netip.Addr{}, fmt.Errorf("fake: no free address left in %s (%d in use)", m.prefix, len(m.used))
	}
	for {
		a := m.next
		if a == m.last {
			m.next = m.first
		} else {
			m.next = a.Next()
		}
		if _, taken := m.used[a]; !taken {
			m.used[a] = struct{}{}
			return a, nil
		}
	}
}

// release frees a; releasing a free address does nothing.
func (m *ipam) release(a netip.Addr) { delete(m.used, a) }
