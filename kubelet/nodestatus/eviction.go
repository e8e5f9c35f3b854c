package nodestatus

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Eviction signals, as the kubelet names them in --eviction-hard.
const (
	SignalMemoryAvailable  = "memory.available"
	SignalNodeFSAvailable  = "nodefs.available"
	SignalNodeFSInodesFree = "nodefs.inodesFree"
	SignalPIDAvailable     = "pid.available"
)

// ErrInvalidThreshold is wrapped by errors about EvictionHard.
var ErrInvalidThreshold = errors.New("invalid eviction threshold")

// DefaultEvictionHard returns the kubelet's default hard eviction
// thresholds on Linux (memory.available<100Mi, nodefs.available<10%,
// nodefs.inodesFree<5%) plus pid.available<5%, which the kubelet leaves
// unset: without it PIDPressure could never become true. podkit keeps
// images on the node filesystem, so there are no imagefs signals.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		SignalMemoryAvailable:  "100Mi",
		SignalNodeFSAvailable:  "10%",
		SignalNodeFSInodesFree: "5%",
		SignalPIDAvailable:     "5%",
	}
}

// threshold is one signal's limit: an absolute quantity, or a fraction of
// the signal's capacity.
type threshold struct {
	quantity *resource.Quantity
	fraction float64
}

// value is the limit for a signal whose total is capacity.
func (t threshold) value(capacity int64) int64 {
	if t.quantity != nil {
		return t.quantity.Value()
	}
	return int64(t.fraction * float64(capacity))
}

// parseThresholds parses an --eviction-hard map: values are quantities
// ("100Mi", "1000") or percentages ("10%").
func parseThresholds(m map[string]string) (map[string]threshold, error) {
	out := map[string]threshold{}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v := strings.TrimSpace(m[name])
		switch name {
		case SignalMemoryAvailable, SignalNodeFSAvailable, SignalNodeFSInodesFree, SignalPIDAvailable:
		default:
			return nil, fmt.Errorf("%w: unknown signal %q", ErrInvalidThreshold, name)
		}
		if pct, ok := strings.CutSuffix(v, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || f < 0 || f > 100 {
				return nil, fmt.Errorf("%w: %s=%q: a percentage between 0%% and 100%% is required", ErrInvalidThreshold, name, v)
			}
			out[name] = threshold{fraction: f / 100}
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("%w: %s=%q: not a non-negative quantity", ErrInvalidThreshold, name, v)
		}
		out[name] = threshold{quantity: &q}
	}
	return out, nil
}

// evictionReservation is what hard eviction thresholds keep out of
// allocatable, as the kubelet's hardEvictionReservation: memory.available
// from memory, nodefs.available from ephemeral-storage.
func evictionReservation(th map[string]threshold, capacity corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for signal, res := range map[string]corev1.ResourceName{
		SignalMemoryAvailable: corev1.ResourceMemory, SignalNodeFSAvailable: corev1.ResourceEphemeralStorage,
	} {
		t, ok := th[signal]
		if !ok {
			continue
		}
		c, ok := capacity[res]
		if !ok {
			continue
		}
		out[res] = *resource.NewQuantity(t.value(c.Value()), resource.BinarySI)
	}
	return out
}

// Pressure conditions and the signals behind them.
var pressureSignals = map[corev1.NodeConditionType][]string{
	corev1.NodeMemoryPressure: {SignalMemoryAvailable},
	corev1.NodeDiskPressure:   {SignalNodeFSAvailable, SignalNodeFSInodesFree},
	corev1.NodePIDPressure:    {SignalPIDAvailable},
}

// below reports whether signal is under its threshold in s; a signal
// without a threshold or without a capacity is never under.
func below(th map[string]threshold, signal string, s Signals) bool {
	t, ok := th[signal]
	if !ok {
		return false
	}
	var avail, capacity int64
	switch signal {
	case SignalMemoryAvailable:
		avail, capacity = s.MemoryAvailable, s.MemoryCapacity
	case SignalNodeFSAvailable:
		avail, capacity = s.NodeFSAvailable, s.NodeFSCapacity
	case SignalNodeFSInodesFree:
		avail, capacity = s.NodeFSInodesFree, s.NodeFSInodes
	case SignalPIDAvailable:
		avail, capacity = s.PIDsAvailable, s.PIDsMax
	}
	return capacity > 0 && avail < t.value(capacity)
}

// pressureTracker holds the pressure conditions the way the eviction
// manager does: a condition holds from the last observation of a signal
// under its threshold until PressureTransitionPeriod has passed without
// another, so a node hovering at the threshold does not flap.
type pressureTracker struct {
	th       map[string]threshold
	period   time.Duration
	lastSeen map[corev1.NodeConditionType]time.Time
}

// observe records signals seen at now (ok false: no observation).
func (p *pressureTracker) observe(now time.Time, s Signals, ok bool) {
	if !ok {
		return
	}
	for cond, signals := range pressureSignals {
		for _, sig := range signals {
			if below(p.th, sig, s) {
				p.lastSeen[cond] = now
			}
		}
	}
}

// under reports whether cond holds at now.
func (p *pressureTracker) under(cond corev1.NodeConditionType, now time.Time) bool {
	seen, ok := p.lastSeen[cond]
	return ok && (now.Equal(seen) || now.Sub(seen) < p.period)
}
