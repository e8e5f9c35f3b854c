package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in the controller manager.
const Name = "garbagecollector"

// EventSource is the component named in the events the collector records.
const EventSource = "garbage-collector-controller"

// Defaults of the options.
const (
	// DefaultResyncPeriod is how often discovery is re-read for resources
	// that appeared or vanished (Kubernetes: 30 s).
	DefaultResyncPeriod = 30 * time.Second
	// DefaultAbsentCacheSize bounds the cache of owners verified absent.
	DefaultAbsentCacheSize = 500
)

// DefaultIgnoredResources are not monitored: events are never owners or
// dependents worth a watch (Kubernetes ignores them too).
func DefaultIgnoredResources() []schema.GroupResource {
	return []schema.GroupResource{{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}}
}

// ErrNotSynced is returned by Run when the monitors' caches did not sync
// before ctx ended.
var ErrNotSynced = errors.New("garbage collector monitors did not sync")

// Config holds the collector's collaborators.
type Config struct {
	// Metadata reads, patches and deletes objects of every resource, and
	// watches the resources the shared typed informers do not know
	// (required).
	Metadata metadata.Interface
	// Discovery lists the served resources; nil uses the Context client's.
	Discovery discovery.DiscoveryInterface
}

// Option configures optional settings.
type Option func(*options) error

type options struct {
	resync        time.Duration
	ignored       map[schema.GroupResource]bool
	metadataOnly  bool
	absentEntries int
}

// WithResyncPeriod sets how often discovery is re-read.
func WithResyncPeriod(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("gc: resync period %s must be positive", d)
		}
		o.resync = d
		return nil
	}
}

// WithIgnoredResources replaces DefaultIgnoredResources.
func WithIgnoredResources(grs ...schema.GroupResource) Option {
	return func(o *options) error {
		o.ignored = map[schema.GroupResource]bool{}
		for _, gr := range grs {
			o.ignored[gr] = true
		}
		return nil
	}
}

// WithMetadataInformersOnly watches every resource with a metadata
// informer of its own instead of sharing the typed informers the other
// controllers use for the built-in resources.
func WithMetadataInformersOnly() Option {
	return func(o *options) error { o.metadataOnly = true; return nil }
}

// WithAbsentCacheSize bounds the cache of owners verified absent.
func WithAbsentCacheSize(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("gc: absent cache size %d must be positive", n)
		}
		o.absentEntries = n
		return nil
	}
}

// GarbageCollector deletes objects whose owners are gone, and carries out
// foreground and orphan deletions.
type GarbageCollector struct {
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	informers informers.SharedInformerFactory
	recorder  record.EventRecorder
	log       *slog.Logger
	opts      options

	graph           *graph
	absent          *absentCache
	changes         workqueue.TypedInterface[*event]
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]

	monitorsMu sync.Mutex
	monitors   map[schema.GroupVersionResource]*monitor

	// enqueued and processed count graph events, so the start of the
	// workers can wait for the initial lists to be in the graph.
	enqueued, processed atomic.Int64
}

var _ controller.Controller = (*GarbageCollector)(nil)

// New returns the garbage collector. It discovers resources and starts its
// monitors in Run.
func New(c *controller.Context, cfg Config, opts ...Option) (*GarbageCollector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	if cfg.Metadata == nil {
		return nil, errors.New("gc: Config.Metadata is required")
	}
	o := options{resync: DefaultResyncPeriod, absentEntries: DefaultAbsentCacheSize}
	if err := WithIgnoredResources(DefaultIgnoredResources()...)(&o); err != nil {
		return nil, err
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	disc := cfg.Discovery
	if disc == nil {
		disc = c.Client.Discovery()
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	rec := c.Recorder(EventSource)
	return &GarbageCollector{
		metadata:        cfg.Metadata,
		discovery:       disc,
		mapper:          restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		informers:       c.Informers,
		recorder:        rec,
		log:             log,
		opts:            o,
		graph:           newGraph(),
		absent:          newAbsentCache(o.absentEntries),
		changes:         workqueue.NewTyped[*event](),
		attemptToDelete: controller.NewQueue[*node]("garbage_collector_attempt_to_delete"),
		attemptToOrphan: controller.NewQueue[*node]("garbage_collector_attempt_to_orphan"),
		monitors:        map[schema.GroupVersionResource]*monitor{},
	}, nil
}

// Name implements controller.Controller.
func (gc *GarbageCollector) Name() string { return Name }

// Run discovers the resources, builds the graph from their informers, and
// once every monitor has synced runs workers goroutines on each of the
// attempt-to-delete and attempt-to-orphan queues. It re-reads discovery
// every resync period.
func (gc *GarbageCollector) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	defer func() {
		gc.changes.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
		wg.Wait()
		gc.stopMonitors()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gc.processGraphChange() {
		}
	}()
	if err := gc.syncMonitors(ctx); err != nil {
		// Partial discovery: monitor what was found, retry at the resync.
		gc.log.Warn("garbage collector discovery incomplete", "err", err)
	}
	if err := gc.waitForSync(ctx); err != nil {
		return err
	}
	gc.log.Debug("garbage collector synced", "nodes", gc.graph.len())
	for range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for gc.processAttemptToDelete(ctx) {
			}
		}()
		go func() {
			defer wg.Done()
			for gc.processAttemptToOrphan(ctx) {
			}
		}()
	}
	ticker := time.NewTicker(gc.opts.resync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			gc.mapper.Reset()
			if err := gc.syncMonitors(ctx); err != nil {
				gc.log.Warn("garbage collector discovery resync incomplete", "err", err)
			}
		}
	}
}

// waitForSync waits until every monitor delivered its initial list and the
// graph builder has applied every event queued by then, so that no worker
// acts on an incomplete graph (a foreground owner must see all its
// dependents). Discovery is retried while nothing could be monitored.
func (gc *GarbageCollector) waitForSync(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	lastDiscovery := time.Now()
	var target int64 = -1
	for {
		switch {
		case target >= 0 && gc.processed.Load() >= target:
			return nil
		case target < 0 && gc.monitorsSynced():
			target = gc.enqueued.Load()
			continue
		case target < 0 && gc.monitorCount() == 0 && time.Since(lastDiscovery) >= time.Second:
			lastDiscovery = time.Now()
			if err := gc.syncMonitors(ctx); err != nil {
				gc.log.Warn("garbage collector discovery incomplete", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotSynced, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// Len reports the number of objects in the dependency graph (for tests and
// metrics).
func (gc *GarbageCollector) Len() int { return gc.graph.len() }
