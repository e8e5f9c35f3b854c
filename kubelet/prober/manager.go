package prober

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Config holds the manager's collaborators.
type Config struct {
	// Exec runs exec probes; nil makes every exec probe error.
	Exec Execer
}

type options struct {
	clock     clock.WithTicker
	log       *slog.Logger
	rand      func() float64
	userAgent string
	buffer    int
}

// Option configures a Manager.
type Option func(*options) error

// WithClock sets the clock of periods, delays and thresholds (tests pass a
// k8s.io/utils/clock/testing.FakeClock).
func WithClock(c clock.WithTicker) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("prober: nil clock")
		}
		o.clock = c
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("prober: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithRand sets the source of the first-probe jitter, a function returning
// values in [0, 1); func() float64 { return 0 } disables the jitter.
func WithRand(f func() float64) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("prober: nil rand")
		}
		o.rand = f
		return nil
	}
}

// WithUserAgent sets the User-Agent of HTTP and gRPC probes
// (DefaultUserAgent).
func WithUserAgent(ua string) Option {
	return func(o *options) error {
		if ua == "" {
			return fmt.Errorf("prober: empty user agent")
		}
		o.userAgent = ua
		return nil
	}
}

// WithUpdateBuffer sets the capacity of the Results channel (default 100).
// Workers block when it is full, so a slow consumer slows probing down
// rather than losing results.
func WithUpdateBuffer(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("prober: negative update buffer %d", n)
		}
		o.buffer = n
		return nil
	}
}

// Manager runs the probes of the pods it is given. It is safe for
// concurrent use.
type Manager struct {
	exec      Execer
	opts      options
	log       *slog.Logger
	clock     clock.WithTicker
	start     time.Time
	dialer    *net.Dialer
	transport *http.Transport
	updates   chan Update
	wg        sync.WaitGroup

	mu     sync.RWMutex
	pods   map[types.UID]*podEntry
	closed bool

	// afterPass, when set (by tests before AddPod), is called each time a
	// worker has finished a pass and is about to wait.
	afterPass func(*worker)
}

// podEntry is a pod's probing state.
type podEntry struct {
	uid        types.UID
	name       string // namespace/name, for logs
	deleting   bool
	cancel     context.CancelFunc
	containers map[string]*containerEntry
}

// containerEntry is the prober's view of one container: the current
// attempt and the thresholded result of each kind of probe for it.
type containerEntry struct {
	spec      *corev1.Container
	id        string
	startedAt time.Time
	podIP     string
	running   bool
	results   [numKinds]Result
	workers   [numKinds]*worker
}

// initialResult is a kind's state for a new container: not ready, alive,
// and not known to have started.
func initialResult(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// NewManager returns a manager; it starts no goroutine until AddPod.
func NewManager(cfg Config, opts ...Option) (*Manager, error) {
	o := options{
		clock:     clock.RealClock{},
		log:       slog.Default(),
		rand:      rand.Float64,
		userAgent: DefaultUserAgent,
		buffer:    100,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	d := newDialer()
	return &Manager{
		exec:      cfg.Exec,
		opts:      o,
		log:       o.log,
		clock:     o.clock,
		start:     o.clock.Now(),
		dialer:    d,
		transport: newTransport(d),
		updates:   make(chan Update, o.buffer),
		pods:      map[types.UID]*podEntry{},
	}, nil
}

// Results returns the channel of probe updates. It is closed by Close.
func (m *Manager) Results() <-chan Update { return m.updates }

// AddPod starts the workers of pod's probes (app containers and restartable
// init containers). Adding a known pod again only records whether it is
// being deleted: from then on liveness and startup probes report success
// and stop, as the kubelet does during graceful termination. Every pod must
// be added, also one without probes, for Ready and Started to know it.
func (m *Manager) AddPod(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if e, ok := m.pods[pod.UID]; ok {
		e.deleting = pod.DeletionTimestamp != nil
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &podEntry{
		uid:        pod.UID,
		name:       pod.Namespace + "/" + pod.Name,
		deleting:   pod.DeletionTimestamp != nil,
		cancel:     cancel,
		containers: map[string]*containerEntry{},
	}
	m.pods[pod.UID] = e
	add := func(c *corev1.Container) {
		ce := &containerEntry{spec: c.DeepCopy()}
		e.containers[c.Name] = ce
		for k, p := range map[Kind]*corev1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if p == nil {
				continue
			}
			ce.results[k] = initialResult(k)
			w := &worker{m: m, pod: e, container: ce, name: c.Name, kind: k, spec: defaulted(p), trigger: make(chan struct{}, 1)}
			ce.workers[k] = w
			m.wg.Add(1)
			go w.run(ctx)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
}

// RemovePod stops the pod's workers and forgets it. Updates of its probes
// already in flight may still be delivered.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	e, ok := m.pods[uid]
	delete(m.pods, uid)
	m.mu.Unlock()
	if ok {
		e.cancel()
	}
}

// UpdateContainer tells the manager about a container of an added pod. A
// new containerID (a start or restart) resets the container's probe states
// to their initial values and probes it at once (subject to
// initialDelaySeconds, counted from startedAt); podIP is where httpGet,
// tcpSocket and grpc probes connect. An empty containerID says the
// container is not running any more (exited or removed): its probes pause
// and it is neither ready nor started until the next start.
func (m *Manager) UpdateContainer(podUID types.UID, containerName, containerID string, startedAt time.Time, podIP string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[podUID]
	if !ok {
		return
	}
	ce, ok := e.containers[containerName]
	if !ok {
		return
	}
	if containerID == "" {
		ce.running = false
		if ce.workers[Readiness] != nil {
			ce.results[Readiness] = Failure
		}
		return
	}
	ce.running = true
	ce.podIP = podIP
	if containerID == ce.id {
		return
	}
	ce.id, ce.startedAt = containerID, startedAt
	for k, w := range ce.workers {
		if w != nil {
			ce.results[k] = initialResult(Kind(k))
			w.poke()
		}
	}
}

// Started reports whether the container runs and has started: its startup
// probe, if any, has succeeded.
func (m *Manager) Started(podUID types.UID, containerName string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ce := m.containerLocked(podUID, containerName)
	return ce != nil && ce.startedLocked()
}

// Ready reports whether the container runs, has started, and its readiness
// probe, if any, has succeeded.
func (m *Manager) Ready(podUID types.UID, containerName string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ce := m.containerLocked(podUID, containerName)
	if ce == nil || !ce.startedLocked() {
		return false
	}
	return ce.workers[Readiness] == nil || ce.results[Readiness] == Success
}

func (m *Manager) containerLocked(podUID types.UID, name string) *containerEntry {
	if e, ok := m.pods[podUID]; ok {
		return e.containers[name]
	}
	return nil
}

func (ce *containerEntry) startedLocked() bool {
	if !ce.running || ce.id == "" {
		return false
	}
	return ce.workers[Startup] == nil || ce.results[Startup] == Success
}

// Close stops every worker, waits for them, and closes the Results
// channel. Later calls of AddPod do nothing.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for uid, e := range m.pods {
		e.cancel()
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	m.wg.Wait()
	close(m.updates)
	m.transport.CloseIdleConnections()
	return nil
}

// jitter is how long a new worker waits before its first probe: a random
// part of its period when the manager itself started less than a period
// ago, so that a restarted kubelet does not probe every container at once.
func (m *Manager) jitter(period time.Duration) time.Duration {
	if period > m.clock.Since(m.start) {
		return time.Duration(m.opts.rand() * float64(period))
	}
	return 0
}
