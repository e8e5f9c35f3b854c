package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// Config holds the Scheduler's required collaborators.
type Config struct {
	// Client talks to the API server (podkit's or any Kubernetes').
	Client kubernetes.Interface
	// Profiles are the scheduler names served, each with its plugins; at
	// least one (see plugins.DefaultProfile).
	Profiles []Profile
}

// Scheduler assigns pending pods to nodes. Build it with New, then Run it.
type Scheduler struct {
	client   kubernetes.Interface
	opts     options
	log      *slog.Logger
	profiles map[string]*framework
	cache    *Cache
	queue    *Queue
	snapshot *Snapshot
	metrics  *metrics
	gatherer prometheus.Gatherer
	par      parallelizer
	rand     *rand.Rand

	informers   informers.SharedInformerFactory
	podLister   corelisters.PodLister
	nsLister    corelisters.NamespaceLister
	recorders   map[string]record.EventRecorder
	broadcaster record.EventBroadcaster
	// handlersSynced report when the handlers have seen the initial lists.
	handlersSynced []cache.InformerSynced

	// nextStartNodeIndex rotates where each cycle starts scanning nodes.
	nextStartNodeIndex int
	// buf holds the scheduling goroutine's reusable per-cycle slices.
	buf buffers
	// inflight tracks binding cycles and status patches; bindSlots bounds
	// the binding cycles.
	inflight    sync.WaitGroup
	bindSlots   chan struct{}
	statusSlots chan struct{}
	// bindJobs hands binding cycles to idle binder goroutines; binders
	// counts those goroutines.
	bindJobs chan bindJob
	binders  atomic.Int32
	runOnce  sync.Once
}

// New builds a Scheduler and registers its informer event handlers.
func New(cfg Config, opts ...Option) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("scheduler: nil client: %w", ErrProfile)
	}
	if len(cfg.Profiles) == 0 {
		return nil, fmt.Errorf("scheduler: no profile: %w", ErrProfile)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	s := &Scheduler{
		client:    cfg.Client,
		opts:      o,
		log:       o.logger,
		profiles:  map[string]*framework{},
		cache:     NewCache(),
		snapshot:  NewEmptySnapshot(),
		par:       parallelizer{workers: o.parallelism},
		recorders: map[string]record.EventRecorder{},
		bindSlots: make(chan struct{}, o.maxBindings),
		bindJobs:  make(chan bindJob),
		// Status patches of unschedulable pods, at most this many at once.
		statusSlots: make(chan struct{}, 16),
	}
	seed := o.seed
	if !o.seeded {
		seed = rand.Uint64()
	}
	s.rand = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	binder := &APIBinder{Client: cfg.Client}
	for _, p := range cfg.Profiles {
		fw, err := newFramework(p, binder)
		if err != nil {
			return nil, err
		}
		if _, dup := s.profiles[fw.name]; dup {
			return nil, fmt.Errorf("scheduler name %q used by two profiles: %w", fw.name, ErrProfile)
		}
		s.profiles[fw.name] = fw
	}

	reg := o.registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, s.gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		s.gatherer = g
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s.metrics = m

	s.queue = NewQueue(QueueConfig{
		Clock:              o.clock,
		InitialBackoff:     o.initialBackoff,
		MaxBackoff:         o.maxBackoff,
		MaxInUnschedulable: o.maxInUnschedulable,
		PreEnqueue:         s.preEnqueue,
		EventMatches: func(p *QueuedPodInfo, ev ClusterEvent) bool {
			fw, ok := s.profiles[schedulerNameOf(p.Pod)]
			return !ok || fw.eventMayHelp(p, ev)
		},
		OnChange: m.queueSizes,
	})

	if o.recorders != nil {
		for name := range s.profiles {
			s.recorders[name] = o.recorders(name)
		}
	} else {
		s.broadcaster = record.NewBroadcaster()
		for name := range s.profiles {
			s.recorders[name] = s.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: name})
		}
	}

	s.informers = o.informers
	if s.informers == nil {
		s.informers = informers.NewSharedInformerFactory(cfg.Client, 0)
	}
	if err := s.addEventHandlers(); err != nil {
		return nil, err
	}
	s.snapshot.SetNamespaceLabels(func(ns string) labels.Set {
		n, err := s.nsLister.Get(ns)
		if err != nil {
			return nil
		}
		return n.Labels
	})
	return s, nil
}

// schedulerNameOf returns the pod's scheduler name, defaulted.
func schedulerNameOf(pod *corev1.Pod) string {
	if pod.Spec.SchedulerName == "" {
		return DefaultSchedulerName
	}
	return pod.Spec.SchedulerName
}

// preEnqueue runs the PreEnqueue plugins of the pod's profile.
func (s *Scheduler) preEnqueue(pod *corev1.Pod) error {
	fw, ok := s.profiles[schedulerNameOf(pod)]
	if !ok {
		return nil
	}
	for _, pl := range fw.preEnqueue {
		if err := pl.p.PreEnqueue(context.Background(), pod); err != nil {
			return withPlugin(err, pl.name)
		}
	}
	return nil
}

// Cache returns the scheduler's cache (read it, do not feed it).
func (s *Scheduler) Cache() *Cache { return s.cache }

// Queue returns the scheduling queue.
func (s *Scheduler) Queue() *Queue { return s.queue }

// Gatherer returns the registry holding the scheduler's metrics, when it
// is a Gatherer (always, unless WithMetricsRegisterer gave a bare
// Registerer).
func (s *Scheduler) Gatherer() prometheus.Gatherer { return s.gatherer }

// Run starts the informers, waits for their caches, then schedules pods
// one at a time until ctx is cancelled. It waits for bindings in flight
// before returning. Run may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	err := errors.New("scheduler: Run called twice")
	s.runOnce.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Scheduler) run(ctx context.Context) error {
	if s.broadcaster != nil {
		sink := newConcurrentSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")},
			eventWriters, eventQueueDepth, eventRetryBackoff, s.log)
		s.broadcaster.StartRecordingToSink(sink)
		defer func() {
			s.broadcaster.Shutdown()
			// Events already accepted are written before Run returns,
			// for a while at most.
			drain, cancel := context.WithTimeout(context.Background(), eventDrainTimeout)
			defer cancel()
			sink.close(drain)
		}()
	}
	s.informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.handlersSynced...) {
		return fmt.Errorf("scheduler: informers did not sync: %w", context.Cause(ctx))
	}
	s.log.Info("scheduler started", "profiles", len(s.profiles))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.queue.Run(ctx)
	}()
	for {
		if err := s.ScheduleOne(ctx); err != nil {
			break
		}
	}
	s.queue.Close()
	wg.Wait()
	s.inflight.Wait()
	s.log.Info("scheduler stopped")
	return nil
}

// The event writers: enough concurrent writes to keep up with thousands of
// binds a second (8 writers kept up with 4,000 pods/s in the scheduler
// benchmark), each queue as deep as the broadcaster's own.
const (
	eventWriters      = 8
	eventQueueDepth   = 1000
	eventRetryBackoff = 100 * time.Millisecond
	eventDrainTimeout = 10 * time.Second
)

// since measures from start on the scheduler's clock.
func (s *Scheduler) since(start time.Time) time.Duration { return s.opts.clock.Since(start) }
