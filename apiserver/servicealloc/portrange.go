package servicealloc

import (
	"fmt"
	"math/rand/v2"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// PortRange allocates node ports from a range such as 30000-32767. It is
// safe for concurrent use.
type PortRange struct {
	pr utilnet.PortRange

	mu   sync.Mutex
	bits *bitmap
	rand *rand.Rand
}

// NewPortRange returns an empty allocator over pr.
func NewPortRange(pr utilnet.PortRange, opts ...Option) (*PortRange, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return newPortRange(pr, seedFrom(o.source))
}

func newPortRange(pr utilnet.PortRange, r *rand.Rand) (*PortRange, error) {
	if pr.Size < 1 || pr.Base < 1 || pr.Base+pr.Size-1 > 65535 {
		return nil, fmt.Errorf("node port range %d+%d: %w", pr.Base, pr.Size, ErrInvalidRange)
	}
	return &PortRange{pr: pr, bits: newBitmap(pr.Size, staticBand(pr.Size, 16, 32, 128)), rand: r}, nil
}

// Range returns the port range.
func (r *PortRange) Range() utilnet.PortRange { return r.pr }

// Size is the number of ports in the range.
func (r *PortRange) Size() int { return r.pr.Size }

// StaticSize is the number of ports in the lower, static band.
func (r *PortRange) StaticSize() int { return r.bits.static }

// Used returns the number of allocated ports.
func (r *PortRange) Used() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits.used
}

// Free returns the number of ports left.
func (r *PortRange) Free() int { return r.Size() - r.Used() }

// Contains reports whether port is in the range.
func (r *PortRange) Contains(port int) bool { return r.pr.Contains(port) }

func (r *PortRange) notInRange(port int) error {
	return &RangeError{Value: fmt.Sprint(port), Range: r.pr.String(), Port: true}
}

// Allocate reserves port: a *RangeError outside the range,
// ErrPortAllocated when it is taken.
func (r *PortRange) Allocate(port int) error {
	if !r.pr.Contains(port) {
		return r.notInRange(port)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.bits.set(port - r.pr.Base) {
		return ErrPortAllocated
	}
	return nil
}

// Check reports what Allocate(port) would, without reserving.
func (r *PortRange) Check(port int) error {
	if !r.pr.Contains(port) {
		return r.notInRange(port)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bits.has(port - r.pr.Base) {
		return ErrPortAllocated
	}
	return nil
}

// AllocateNext reserves a free port, at random in the upper band first;
// ErrFull when none is left.
func (r *PortRange) AllocateNext() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.bits.pick(r.rand, nil)
	if !ok {
		return 0, ErrFull
	}
	r.bits.set(i)
	return r.pr.Base + i, nil
}

// peek chooses a port AllocateNext could, without reserving it.
func (r *PortRange) peek(skip func(int) bool) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var skipSlot func(int) bool
	if skip != nil {
		skipSlot = func(i int) bool { return skip(r.pr.Base + i) }
	}
	i, ok := r.bits.pick(r.rand, skipSlot)
	if !ok {
		return 0, ErrFull
	}
	return r.pr.Base + i, nil
}

// Release frees port; false when it was not allocated or is outside the
// range.
func (r *PortRange) Release(port int) bool {
	if !r.pr.Contains(port) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits.clear(port - r.pr.Base)
}

// Has reports whether port is allocated.
func (r *PortRange) Has(port int) bool {
	if !r.pr.Contains(port) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bits.has(port - r.pr.Base)
}

// Allocated returns the allocated ports in increasing order.
func (r *PortRange) Allocated() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, r.bits.used)
	r.bits.forEach(func(i int) { out = append(out, r.pr.Base+i) })
	return out
}

func (r *PortRange) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bits.reset()
}
