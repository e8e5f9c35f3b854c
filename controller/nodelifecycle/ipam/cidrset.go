package ipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"sync"
)

// MaxSubnetBits caps how many node subnets a cluster CIDR may be cut into
// (2^16, as Kubernetes' range allocator).
const MaxSubnetBits = 16

// ErrExhausted is returned when every node subnet is in use.
var ErrExhausted = errors.New("no node CIDR available")

// ErrOutOfRange is returned for a CIDR outside the cluster CIDR.
var ErrOutOfRange = errors.New("CIDR is not within the cluster CIDR")

// CIDRSet hands out the node-sized subnets of one cluster CIDR, tracked in
// a bitmap. Allocation is next-fit: it continues after the last subnet
// handed out, so a released subnet is not reused at once (a deleted node's
// addresses may still be in flight). It is safe for concurrent use.
type CIDRSet struct {
	cluster  netip.Prefix
	nodeBits int // node mask size
	shift    int // address bits per node subnet
	size     int // number of node subnets

	mu   sync.Mutex
	used []uint64
	n    int // subnets in use
	next int // next candidate index
}

// NewCIDRSet cuts cluster into subnets of nodeMaskSize bits.
func NewCIDRSet(cluster netip.Prefix, nodeMaskSize int) (*CIDRSet, error) {
	if !cluster.IsValid() {
		return nil, fmt.Errorf("ipam: invalid cluster CIDR %v", cluster)
	}
	cluster = cluster.Masked()
	bits := cluster.Addr().BitLen()
	if nodeMaskSize < cluster.Bits() || nodeMaskSize > bits {
		return nil, fmt.Errorf("ipam: node mask size %d must be between the cluster CIDR's %d and %d", nodeMaskSize, cluster.Bits(), bits)
	}
	if nodeMaskSize-cluster.Bits() > MaxSubnetBits {
		return nil, fmt.Errorf("ipam: cluster CIDR %s cut into /%d subnets gives more than 2^%d subnets", cluster, nodeMaskSize, MaxSubnetBits)
	}
	size := 1 << (nodeMaskSize - cluster.Bits())
	return &CIDRSet{cluster: cluster, nodeBits: nodeMaskSize, shift: bits - nodeMaskSize, size: size, used: make([]uint64, (size+63)/64)}, nil
}

// Cluster returns the cluster CIDR.
func (s *CIDRSet) Cluster() netip.Prefix { return s.cluster }

// Size is the number of node subnets; Used how many are allocated.
func (s *CIDRSet) Size() int { return s.size }

// Used returns the number of subnets in use.
func (s *CIDRSet) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *CIDRSet) isSet(i int) bool { return s.used[i/64]&(1<<(i%64)) != 0 }
func (s *CIDRSet) set(i int)        { s.used[i/64] |= 1 << (i % 64) }
func (s *CIDRSet) clear(i int)      { s.used[i/64] &^= 1 << (i % 64) }

// AllocateNext returns a free node subnet, or ErrExhausted.
func (s *CIDRSet) AllocateNext() (netip.Prefix, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == s.size {
		return netip.Prefix{}, fmt.Errorf("ipam: %s: %w", s.cluster, ErrExhausted)
	}
	for k := range s.size {
		i := (s.next + k) % s.size
		if !s.isSet(i) {
			s.set(i)
			s.n++
			s.next = (i + 1) % s.size
			return s.subnet(i), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("ipam: %s: %w", s.cluster, ErrExhausted)
}

// Occupy marks every node subnet overlapping p as used (idempotent). It
// reports whether p was entirely free before.
func (s *CIDRSet) Occupy(p netip.Prefix) (bool, error) {
	first, last, err := s.indexes(p)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	free := true
	for i := first; i <= last; i++ {
		if s.isSet(i) {
			free = false
			continue
		}
		s.set(i)
		s.n++
	}
	return free, nil
}

// Release frees every node subnet overlapping p (idempotent).
func (s *CIDRSet) Release(p netip.Prefix) error {
	first, last, err := s.indexes(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := first; i <= last; i++ {
		if s.isSet(i) {
			s.clear(i)
			s.n--
		}
	}
	return nil
}

// Contains reports whether p lies within the cluster CIDR (same family).
func (s *CIDRSet) Contains(p netip.Prefix) bool {
	return p.IsValid() && p.Addr().BitLen() == s.cluster.Addr().BitLen() &&
		p.Bits() >= s.cluster.Bits() && s.cluster.Contains(p.Addr())
}

// indexes returns the range of node subnets p overlaps.
func (s *CIDRSet) indexes(p netip.Prefix) (int, int, error) {
	if !s.Contains(p) {
		return 0, 0, fmt.Errorf("ipam: %s in %s: %w", p, s.cluster, ErrOutOfRange)
	}
	p = p.Masked()
	first := s.index(p.Addr())
	if p.Bits() >= s.nodeBits {
		return first, first, nil
	}
	return first, first + (1 << (s.nodeBits - p.Bits())) - 1, nil
}

// index is the number of the node subnet holding addr.
func (s *CIDRSet) index(addr netip.Addr) int {
	off := new(big.Int).Sub(toInt(addr), toInt(s.cluster.Addr()))
	return int(off.Rsh(off, uint(s.shift)).Int64())
}

// subnet returns node subnet number i.
func (s *CIDRSet) subnet(i int) netip.Prefix {
	v := new(big.Int).Lsh(big.NewInt(int64(i)), uint(s.shift))
	v.Add(v, toInt(s.cluster.Addr()))
	return netip.PrefixFrom(fromInt(v, s.cluster.Addr().Is4()), s.nodeBits)
}

func toInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}

func fromInt(v *big.Int, is4 bool) netip.Addr {
	n := 16
	if is4 {
		n = 4
	}
	b := v.FillBytes(make([]byte, n))
	a, _ := netip.AddrFromSlice(b)
	return a
}
