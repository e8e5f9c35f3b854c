package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// ErrDuplicate is returned by Register for a name registered twice.
var ErrDuplicate = errors.New("controller already registered")

// ErrStarted is returned by Register after Run began.
var ErrStarted = errors.New("controller manager already started")

// Manager runs a set of controllers sharing one informer factory, one event
// broadcaster and one clock: the controller manager.
type Manager struct {
	cfg         ManagerConfig
	ctx         *Context
	broadcaster record.EventBroadcaster

	mu      sync.Mutex
	names   []string
	news    map[string]NewFunc
	started bool
}

// NewManager returns a Manager over cfg.Client.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Client == nil {
		return nil, errors.New("controller manager: Client is required")
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("controller manager: Workers %d is negative", cfg.Workers)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, news: map[string]NewFunc{}}
	factory := cfg.Informers
	if factory == nil {
		factory = informers.NewSharedInformerFactory(cfg.Client, cfg.ResyncPeriod)
	}
	rec := cfg.Recorder
	if rec == nil {
		m.broadcaster = record.NewBroadcaster()
		rec = func(component string) record.EventRecorder {
			return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		}
	}
	m.ctx = &Context{
		Client:       cfg.Client,
		Informers:    factory,
		Recorder:     rec,
		Clock:        cfg.Clock,
		Logger:       cfg.Logger,
		ResyncPeriod: cfg.ResyncPeriod,
	}
	return m, nil
}

// Context returns the Context shared by the controllers (each controller's
// constructor receives a copy with its own Logger).
func (m *Manager) Context() *Context { return m.ctx }

// Register adds a controller constructor under name. Controllers are
// constructed in registration order when Run starts.
func (m *Manager) Register(name string, newFn NewFunc) error {
	if name == "" || newFn == nil {
		return errors.New("controller manager: Register needs a name and a constructor")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("registering %q: %w", name, ErrStarted)
	}
	if _, ok := m.news[name]; ok {
		return fmt.Errorf("registering %q: %w", name, ErrDuplicate)
	}
	m.news[name] = newFn
	m.names = append(m.names, name)
	return nil
}

// Run constructs every registered controller, starts the shared informers,
// runs the controllers and blocks until ctx is cancelled and all of them
// returned. A constructor error aborts before anything runs; the first
// error a controller returns cancels the others and is returned.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return ErrStarted
	}
	m.started = true
	names := append([]string(nil), m.names...)
	m.mu.Unlock()

	ctrls := make([]Controller, 0, len(names))
	for _, name := range names {
		c := *m.ctx
		c.Logger = m.ctx.Logger.With("controller", name)
		ctrl, err := m.news[name](&c)
		if err != nil {
			return fmt.Errorf("constructing controller %q: %w", name, err)
		}
		ctrls = append(ctrls, ctrl)
	}
	if m.broadcaster != nil {
		sink := &typedcorev1.EventSinkImpl{Interface: m.cfg.Client.CoreV1().Events("")}
		w := m.broadcaster.StartRecordingToSink(sink)
		defer func() {
			w.Stop()
			m.broadcaster.Shutdown()
		}()
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m.ctx.Informers.Start(ctx.Done())

	var wg sync.WaitGroup
	errs := make(chan error, len(ctrls))
	for i, ctrl := range ctrls {
		workers := m.cfg.Workers
		if w, ok := m.cfg.WorkersPerController[names[i]]; ok && w > 0 {
			workers = w
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.cfg.Logger.Debug("starting controller", "controller", names[i], "workers", workers)
			if err := ctrl.Run(ctx, workers); err != nil && ctx.Err() == nil {
				err = fmt.Errorf("controller %q: %w", names[i], err)
				errs <- err
				cancel(err)
			}
		}()
	}
	// Informers a controller asked for only inside Run are started here.
	m.ctx.Informers.Start(ctx.Done())
	<-ctx.Done()
	wg.Wait()
	m.ctx.Informers.Shutdown()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
