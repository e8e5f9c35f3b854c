package fake

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"k8s.io/utils/clock"
)

// Clock is the time source of a Runner. clock.RealClock and the FakeClock
// of k8s.io/utils/clock/testing implement it.
type Clock interface {
	Now() time.Time
	// NewTimer serves StopContainer's grace period.
	NewTimer(d time.Duration) clock.Timer
	// AfterFunc ends entrypoints that exit by themselves.
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// DefaultPodCIDR is where sandboxes get their addresses unless
// WithPodCIDR says otherwise.
var DefaultPodCIDR = netip.MustParsePrefix("10.88.0.0/16")

// Option configures a Runner.
type Option func(*options) error

type options struct {
	clock    Clock
	script   Script
	podCIDR  netip.Prefix
	handlers map[string]bool
	logger   *slog.Logger
	idSeed   string
	record   bool
}

// WithClock sets the time source (clock.RealClock by default).
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("fake: nil clock")
		}
		o.clock = c
		return nil
	}
}

// WithBehavior replaces Interpret: s decides, at CreateContainer, how each
// container behaves. s runs under the runner's lock and must call neither
// the runner nor its clock (a FakeClock runs timer callbacks, which take
// the runner's lock, while holding its own).
func WithBehavior(s Script) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("fake: nil script")
		}
		o.script = s
		return nil
	}
}

// WithPodCIDR sets the prefix sandbox addresses come from (DefaultPodCIDR
// by default). The first address after the network's is the gateway and is
// never given out, nor is an IPv4 broadcast address.
func WithPodCIDR(p netip.Prefix) Option {
	return func(o *options) error {
		if !p.IsValid() {
			return fmt.Errorf("fake: invalid pod CIDR %v", p)
		}
		o.podCIDR = p.Masked()
		return nil
	}
}

// WithRuntimeHandlers sets the runtime handlers (RuntimeClass handlers)
// sandboxes may ask for, besides the default "". Others fail with
// sandbox.ErrUnknownHandler.
func WithRuntimeHandlers(names ...string) Option {
	return func(o *options) error {
		for _, n := range names {
			o.handlers[n] = true
		}
		return nil
	}
}

// WithLogger sets where the runner logs (nowhere by default).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("fake: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithIDSeed makes sandbox and container IDs a function of seed and the
// order of creation, so a simulation replays with the same IDs. Without
// it the seed is random.
func WithIDSeed(seed string) Option {
	return func(o *options) error {
		o.idSeed = seed
		return nil
	}
}

// WithCallRecording turns the call log read by Calls on or off (on by
// default). Long simulations turn it off: it grows with every call.
func WithCallRecording(on bool) Option {
	return func(o *options) error {
		o.record = on
		return nil
	}
}
