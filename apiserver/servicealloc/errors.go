package servicealloc

import (
	"errors"
	"fmt"
)

// Sentinel errors of the ranges. Their messages are Kubernetes' own, which
// the API server puts in the field errors clients see.
var (
	// ErrFull: no free value is left in the range.
	ErrFull = errors.New("range is full")
	// ErrIPAllocated: the requested cluster IP is held by another Service.
	ErrIPAllocated = errors.New("provided IP is already allocated")
	// ErrPortAllocated: the requested node port is held by another Service.
	ErrPortAllocated = errors.New("provided port is already allocated")
	// ErrNotInRange is wrapped by *RangeError.
	ErrNotInRange = errors.New("not in the valid range")
	// ErrInvalidRange: a range that cannot be allocated from (too large,
	// no usable value, malformed).
	ErrInvalidRange = errors.New("invalid allocation range")
)

// RangeError reports a requested value outside the range. It wraps
// ErrNotInRange.
type RangeError struct {
	// Value is the requested IP or port, as text.
	Value string
	// Range is the valid range: a CIDR ("10.96.0.0/12") or a port range
	// ("30000-32767").
	Range string
	// Port tells a node port from a cluster IP.
	Port bool
}

func (e *RangeError) Error() string {
	if e.Port {
		return fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", e.Range)
	}
	return fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", e.Value, e.Range)
}

// Unwrap makes errors.Is(err, ErrNotInRange) hold.
func (e *RangeError) Unwrap() error { return ErrNotInRange }
