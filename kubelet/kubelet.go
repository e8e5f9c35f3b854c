package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/kubelet/prober"
	"github.com/podkit/podkit/kubelet/volume"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
)

// Kubelet is the node agent. Build it with New and run it with Run.
type Kubelet struct {
	cfg        Config
	log        *slog.Logger
	clock      clock.WithTicker
	client     kubernetes.Interface
	runtime    sandbox.SandboxRunner
	execer     sandbox.Execer
	images     Images
	unpacker   Unpacker
	snapshots  overlay.Snapshotter
	cgroups    Cgroups
	volumes    Volumes
	prober     *prober.Manager
	admitted   admittedPods // admission's accounting of the pods on the node
	imageMemo  imageMemo    // parsed references, image configurations
	resolvMemo resolvMemo   // pods' resolv.conf files
	metrics    *metrics
	http       *http.Client

	cache   *runtimeCache
	workers *podWorkers
	wakeups *wakeups
	status  *statusManager
	births  *birthWriter
	static  *staticSource
	mirrors *mirrorPods

	crashBackoff, pullBackoff *backoff
	// admitMu serialises admission, so pods admitted at once are counted
	// against each other.
	admitMu sync.Mutex

	broadcaster  record.EventBroadcaster
	recorder     record.EventRecorder
	podFactory   informers.SharedInformerFactory
	nodeFactory  informers.SharedInformerFactory
	podInformer  cache.SharedIndexInformer
	nodeInformer cache.SharedIndexInformer
	podHandler   cache.ResourceEventHandlerRegistration
	nodeHandler  cache.ResourceEventHandlerRegistration

	runMu   sync.Mutex
	started bool
	// lastRelist is when the runtime was last listed (Unix ns).
	lastRelist atomic.Int64
}

// ErrAlreadyRunning: Run was called twice.
var ErrAlreadyRunning = errors.New("kubelet already running")

// New builds a kubelet from cfg. It touches nothing until Run.
func New(cfg Config) (*Kubelet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	k := &Kubelet{
		cfg: cfg, log: cfg.Logger.With("component", "kubelet", "node", cfg.NodeName),
		clock: cfg.Clock, client: cfg.Client, runtime: cfg.Runtime,
		images: cfg.Images, unpacker: cfg.Unpacker, snapshots: cfg.Snapshots, cgroups: cfg.Cgroups,
		volumes: cfg.Volumes,
		// Like Kubernetes' hook client: no proxies, no keep-alives, and no
		// certificate checks (pods serve self-signed certificates).
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // as Kubernetes' lifecycle hooks
			CheckRedirect: noRedirect},
	}
	k.execer, _ = cfg.Runtime.(sandbox.Execer)
	if k.volumes == nil {
		m, err := volume.New(volume.Config{
			PodsDir:     filepath.Join(cfg.RootDir, "pods"),
			Client:      cfg.Client,
			Tokens:      volume.NewTokenRequester(cfg.Client, cfg.Clock.Now),
			NodeName:    cfg.NodeName,
			Allocatable: k.allocatable,
			Logger:      cfg.Logger,
			Clock:       cfg.Clock.Now,
		})
		if err != nil {
			return nil, fmt.Errorf("building the volume manager: %w", err)
		}
		k.volumes = m
	}
	popts := append([]prober.Option{prober.WithClock(cfg.Clock), prober.WithLogger(k.log)}, cfg.ProberOptions...)
	var pcfg prober.Config
	if k.execer != nil {
		pcfg.Exec = k.execer
	}
	if k.prober, err = prober.NewManager(pcfg, popts...); err != nil {
		return nil, fmt.Errorf("building the prober: %w", err)
	}
	if k.metrics, err = newMetrics(cfg.Registerer, k.runtimeCounts); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	if k.births, err = newBirthWriter(k); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	k.crashBackoff = newBackoff(cfg.CrashLoopBackOff, cfg.Clock)
	k.pullBackoff = newBackoff(cfg.ImagePullBackOff, cfg.Clock)
	k.cache = newRuntimeCache()
	k.workers = newPodWorkers(k)
	k.wakeups = newWakeups(cfg.Clock)
	k.status = newStatusManager(k)
	k.mirrors = newMirrorPods(k)
	if cfg.StaticPodDir != "" {
		k.static = newStaticSource(k)
	}
	return k, nil
}

// noRedirect keeps hook requests on the pod (Kubernetes does not follow
// redirects to other hosts either).
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Run runs the kubelet until ctx ends: it lists the runtime (adopting what
// runs), watches the node's pods and its static pod directory, and syncs
// every pod in its own worker. When ctx ends it stops its workers and
// returns; containers keep running for the next kubelet to adopt. Run may
// be called once.
func (k *Kubelet) Run(ctx context.Context) error {
	k.runMu.Lock()
	if k.started {
		k.runMu.Unlock()
		return ErrAlreadyRunning
	}
	k.started = true
	k.runMu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k.broadcaster, k.recorder = newBroadcaster(k)
	defer k.broadcaster.Shutdown()

	// The runtime first: workers of pods that already run must see them,
	// and no event may come before the subscription.
	events := k.subscribe(ctx)
	if err := k.relist(ctx); err != nil {
		return fmt.Errorf("listing the runtime: %w", err)
	}
	k.newInformers()
	// The Node before the pods: admission and host IPs read it.
	k.nodeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), k.nodeHandler.HasSynced) {
		k.nodeFactory.Shutdown()
		return nil // stopped before it began
	}
	k.workers.start(ctx)

	var wg sync.WaitGroup
	goRun := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	var fatal error
	var fatalOnce sync.Once
	if k.cfg.NodeStatus != nil {
		goRun(func() {
			if err := k.cfg.NodeStatus.Run(ctx); err != nil && ctx.Err() == nil {
				fatalOnce.Do(func() { fatal = fmt.Errorf("node status: %w", err) })
				cancel()
			}
		})
	}
	k.podFactory.Start(ctx.Done())
	goRun(func() { k.wakeups.run(ctx) })
	goRun(func() { k.status.run(ctx, k.cfg.StatusWorkers) })
	goRun(func() { k.consumeProbeResults(ctx) })
	goRun(func() { k.births.run(ctx) })
	if k.static != nil {
		goRun(func() { k.static.run(ctx) })
	}
	goRun(func() {
		if cache.WaitForCacheSync(ctx.Done(), k.podHandler.HasSynced) {
			k.log.Info("pod sources synced")
		}
	})
	goRun(func() { k.runPLEG(ctx, events) })

	<-ctx.Done()
	k.podFactory.Shutdown()
	k.nodeFactory.Shutdown()
	k.workers.wait()
	_ = k.prober.Close()
	wg.Wait()
	return fatal
}

// consumeProbeResults records probe events and acts on changed results: a
// failed liveness or startup probe makes the worker kill and restart the
// container, a readiness change makes it report the pod's status.
func (k *Kubelet) consumeProbeResults(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case u, ok := <-k.prober.Results():
			if !ok {
				return
			}
			w := k.workers.get(u.PodUID)
			if w == nil {
				continue
			}
			pod, _ := w.snapshot()
			if u.Event != "" && pod != nil {
				k.containerEvent(pod, u.ContainerName, "Warning", u.Event, u.Message)
			}
			if !u.Changed {
				continue
			}
			if u.Probe != prober.Readiness && u.Result == prober.Failure {
				w.mu.Lock()
				if w.probeKills == nil {
					w.probeKills = map[string]string{}
				}
				w.probeKills[u.ContainerID] = strings.ToLower(u.Probe.String())
				w.mu.Unlock()
			}
			w.kick()
		}
	}
}

// until is how long until t, at least 0.
func (k *Kubelet) until(t time.Time) time.Duration {
	return max(t.Sub(k.clock.Now()), 0)
}
