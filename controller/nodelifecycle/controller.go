package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in the controller manager.
const Name = "nodelifecycle"

// EventSource is the component named in the events the controller records.
const EventSource = "node-controller"

// Defaults of the options.
const (
	DefaultGracePeriod        = 40 * time.Second
	DefaultStartupGracePeriod = 60 * time.Second
	DefaultMonitorPeriod      = 5 * time.Second
)

// PodsByNodeIndex indexes the pod informer by spec.nodeName.
const PodsByNodeIndex = "nodelifecycle.podkit.io/node"

// Option configures optional settings.
type Option func(*options) error

type options struct {
	grace, startupGrace, monitor time.Duration
}

// WithGracePeriod sets how long a node may go without renewing its lease
// or posting a Ready heartbeat before it is Unknown.
func WithGracePeriod(d time.Duration) Option {
	return func(o *options) error { return positive("grace period", d, &o.grace) }
}

// WithStartupGracePeriod sets the grace of a node that never posted a
// Ready condition, counted from its creation.
func WithStartupGracePeriod(d time.Duration) Option {
	return func(o *options) error { return positive("startup grace period", d, &o.startupGrace) }
}

// WithMonitorPeriod sets how often (wall time) node health is checked;
// the decisions themselves use the Context's clock.
func WithMonitorPeriod(d time.Duration) Option {
	return func(o *options) error { return positive("monitor period", d, &o.monitor) }
}

func positive(what string, d time.Duration, dst *time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("nodelifecycle: %s %s must be positive", what, d)
	}
	*dst = d
	return nil
}

// Controller monitors node health, keeps condition taints and marks the
// pods of unready nodes not ready.
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseLister
	pods     cache.Indexer
	synced   []cache.InformerSynced
	clock    clock.PassiveClock
	recorder record.EventRecorder
	log      *slog.Logger
	opts     options
	taints   workqueue.TypedRateLimitingInterface[string]

	mu     sync.Mutex
	health map[string]*nodeHealth
	// podsPending holds nodes whose pods still have to be marked not
	// ready (a previous attempt failed).
	podsPending map[string]bool
}

var _ controller.Controller = (*Controller)(nil)

// New returns the controller, registering node, lease and pod informers in
// c.Informers.
func New(c *controller.Context, opts ...Option) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("nodelifecycle: %w", err)
	}
	o := options{grace: DefaultGracePeriod, startupGrace: DefaultStartupGracePeriod, monitor: DefaultMonitorPeriod}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	var clk clock.PassiveClock = c.Clock
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	rec := c.Recorder(EventSource)
	nodeInf := c.Informers.Core().V1().Nodes()
	leaseInf := c.Informers.Coordination().V1().Leases()
	podInf := c.Informers.Core().V1().Pods().Informer()
	if err := AddPodsByNodeIndex(podInf); err != nil {
		return nil, err
	}
	ctrl := &Controller{
		client: c.Client, nodes: nodeInf.Lister(), leases: leaseInf.Lister(), pods: podInf.GetIndexer(),
		synced: []cache.InformerSynced{nodeInf.Informer().HasSynced, leaseInf.Informer().HasSynced, podInf.HasSynced},
		clock:  clk, recorder: rec, log: log, opts: o,
		taints:      controller.NewQueue[string]("nodelifecycle_taints"),
		health:      map[string]*nodeHealth{},
		podsPending: map[string]bool{},
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueueNode,
		UpdateFunc: func(_, cur any) { ctrl.enqueueNode(cur) },
		DeleteFunc: ctrl.nodeDeleted,
	}); err != nil {
		return nil, fmt.Errorf("nodelifecycle: adding node handler: %w", err)
	}
	return ctrl, nil
}

// AddPodsByNodeIndex adds the pods-by-node index to a pod informer unless
// it is there (several controllers share the informer).
func AddPodsByNodeIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[PodsByNodeIndex]; ok {
		return nil
	}
	err := inf.AddIndexers(cache.Indexers{PodsByNodeIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}})
	if err != nil {
		if _, ok := inf.GetIndexer().GetIndexers()[PodsByNodeIndex]; ok {
			return nil // added concurrently
		}
		return fmt.Errorf("adding the pods-by-node index: %w", err)
	}
	return nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run checks node health every monitor period and keeps the taints.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.taints.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, c.synced...); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { controller.RunWorkers(ctx, Name, workers, c.taints, c.syncTaints, c.log) })
	ticker := time.NewTicker(c.opts.monitor)
	defer ticker.Stop()
	for {
		c.monitorNodeHealth(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-ticker.C:
		}
	}
}

func (c *Controller) enqueueNode(obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		c.taints.Add(n.Name)
	}
}

func (c *Controller) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	delete(c.health, n.Name)
	delete(c.podsPending, n.Name)
	c.mu.Unlock()
}

// podsOnNode returns the pods bound to node from the informer cache.
func (c *Controller) podsOnNode(node string) ([]*corev1.Pod, error) {
	objs, err := c.pods.ByIndex(PodsByNodeIndex, node)
	if err != nil {
		return nil, fmt.Errorf("listing pods of node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}
