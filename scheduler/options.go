package scheduler

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Option tunes a Scheduler; an Option rejects invalid values.
type Option func(*options) error

type options struct {
	logger             *slog.Logger
	clock              clock.WithTicker
	parallelism        int
	percentage         int32
	initialBackoff     time.Duration
	maxBackoff         time.Duration
	maxInUnschedulable time.Duration
	registerer         prometheus.Registerer
	recorders          func(schedulerName string) record.EventRecorder
	informers          informers.SharedInformerFactory
	seed               uint64
	seeded             bool
	maxBindings        int
}

func defaultOptions() options {
	return options{
		logger:         slog.Default(),
		clock:          clock.RealClock{},
		parallelism:    runtime.GOMAXPROCS(0),
		initialBackoff: time.Second,
		maxBackoff:     10 * time.Second,
		maxBindings:    64,
	}
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("nil logger: %w", ErrProfile)
		}
		o.logger = l
		return nil
	}
}

// WithClock sets the clock of the queue's backoff and the attempt timings.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("nil clock: %w", ErrProfile)
		}
		o.clock = c
		return nil
	}
}

// WithParallelism bounds the goroutines that evaluate nodes in one cycle
// (default GOMAXPROCS).
func WithParallelism(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("parallelism %d < 1: %w", n, ErrProfile)
		}
		o.parallelism = n
		return nil
	}
}

// WithPercentageOfNodesToScore sets the share of nodes to find feasible
// before scoring, for clusters of 100 nodes or more. 0 (default) adapts as
// Kubernetes does: 50% minus 1% per 125 nodes, at least 5%; 100 scores all.
func WithPercentageOfNodesToScore(p int32) Option {
	return func(o *options) error {
		if p < 0 || p > 100 {
			return fmt.Errorf("percentageOfNodesToScore %d not in [0, 100]: %w", p, ErrProfile)
		}
		o.percentage = p
		return nil
	}
}

// WithPodBackoff sets the backoff after the first failed attempt (default
// 1s), doubled per attempt up to maximum (default 10s).
func WithPodBackoff(initial, maximum time.Duration) Option {
	return func(o *options) error {
		if initial <= 0 || maximum < initial {
			return fmt.Errorf("pod backoff %v..%v invalid: %w", initial, maximum, ErrProfile)
		}
		o.initialBackoff, o.maxBackoff = initial, maximum
		return nil
	}
}

// WithMaxInUnschedulable sets how long an unschedulable pod waits for a
// cluster event before it is retried anyway (default 5m).
func WithMaxInUnschedulable(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("max time in unschedulable %v <= 0: %w", d, ErrProfile)
		}
		o.maxInUnschedulable = d
		return nil
	}
}

// WithMetricsRegisterer registers the scheduler's metrics (by default they
// go to a private registry, see Scheduler.Gatherer).
func WithMetricsRegisterer(r prometheus.Registerer) Option {
	return func(o *options) error {
		o.registerer = r
		return nil
	}
}

// WithEventRecorders sets the event recorder of each profile, by
// schedulerName (by default, core/v1 events written through the client,
// with the scheduler name as the source component).
func WithEventRecorders(f func(schedulerName string) record.EventRecorder) Option {
	return func(o *options) error {
		o.recorders = f
		return nil
	}
}

// WithInformerFactory shares an informer factory (it must be built on the
// same client); the scheduler starts it in Run.
func WithInformerFactory(f informers.SharedInformerFactory) Option {
	return func(o *options) error {
		o.informers = f
		return nil
	}
}

// WithRandSeed makes the random tie-break between equally scored nodes
// reproducible.
func WithRandSeed(seed uint64) Option {
	return func(o *options) error {
		o.seed, o.seeded = seed, true
		return nil
	}
}

// WithMaxInFlightBindings bounds the binds running at once (default 64);
// when the API server falls behind, scheduling waits instead of piling
// up requests.
func WithMaxInFlightBindings(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("max in-flight bindings %d < 1: %w", n, ErrProfile)
		}
		o.maxBindings = n
		return nil
	}
}
