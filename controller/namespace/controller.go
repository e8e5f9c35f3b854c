package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in the controller manager.
const Name = "namespace"

// Defaults of the options.
const (
	// DefaultRequeueBase is added to half the estimate when content
	// remains (Kubernetes requeues after estimate/2 + 1 s).
	DefaultRequeueBase = time.Second
	// DefaultFinalizerEstimate is the wait assumed for objects held only by
	// finalizers (Kubernetes' 15 s).
	DefaultFinalizerEstimate = 15 * time.Second
)

// Config holds the controller's collaborators.
type Config struct {
	// Metadata lists and deletes the namespace's content of every resource
	// (required).
	Metadata metadata.Interface
	// Discovery lists the served resources; nil uses the Context client's.
	Discovery discovery.DiscoveryInterface
}

// Option configures optional settings.
type Option func(*options) error

type options struct {
	requeueBase       time.Duration
	finalizerEstimate time.Duration
}

// WithRequeueBase sets the delay added to half the estimate before a
// namespace whose content is still going away is looked at again.
func WithRequeueBase(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("namespace: requeue base %s must be positive", d)
		}
		o.requeueBase = d
		return nil
	}
}

// WithFinalizerEstimate sets how long objects held by finalizers are
// assumed to take to go away.
func WithFinalizerEstimate(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("namespace: finalizer estimate %s is negative", d)
		}
		o.finalizerEstimate = d
		return nil
	}
}

// Controller deletes the content of terminating namespaces and finalizes
// them.
type Controller struct {
	client    kubernetes.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	clock     clock.PassiveClock
	opts      options
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	log       *slog.Logger
}

var _ controller.Controller = (*Controller)(nil)

// New returns the controller, registering a namespace informer in
// c.Informers.
func New(c *controller.Context, cfg Config, opts ...Option) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	if cfg.Metadata == nil {
		return nil, errors.New("namespace: Config.Metadata is required")
	}
	o := options{requeueBase: DefaultRequeueBase, finalizerEstimate: DefaultFinalizerEstimate}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	disc := cfg.Discovery
	if disc == nil {
		disc = c.Client.Discovery()
	}
	var clk clock.PassiveClock = c.Clock
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	inf := c.Informers.Core().V1().Namespaces().Informer()
	ctrl := &Controller{
		client: c.Client, metadata: cfg.Metadata, discovery: disc, clock: clk, opts: o,
		synced: inf.HasSynced, queue: controller.NewQueue[string]("namespace"), log: log,
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueue,
		UpdateFunc: func(_, cur any) { ctrl.enqueue(cur) },
	}); err != nil {
		return nil, fmt.Errorf("namespace: adding namespace handler: %w", err)
	}
	return ctrl, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run implements controller.Controller.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, c.synced); err != nil {
		return err
	}
	controller.RunWorkers(ctx, Name, workers, c.queue, c.sync, c.log)
	return nil
}

func (c *Controller) enqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return
	}
	c.queue.Add(ns.Name)
}

// sync drives one terminating namespace one step towards deletion. It
// reads the live namespace, so it never acts on a stale cache.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	if ns, err = c.ensureTerminating(ctx, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if !hasFinalizer(ns) {
		return nil
	}
	estimate, err := c.deleteAllContent(ctx, ns)
	if err != nil {
		return fmt.Errorf("deleting content of namespace %s: %w", name, err)
	}
	if estimate > 0 {
		c.log.Debug("namespace content remains", "namespace", name, "estimate", estimate)
		return controller.RequeueAfter(estimate/2 + c.opts.requeueBase)
	}
	if err := c.finalize(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	c.log.Debug("namespace finalized", "namespace", name)
	return nil
}

// ensureTerminating sets phase Terminating on a namespace marked for
// deletion (the API server normally did already).
func (c *Controller) ensureTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	for {
		if ns.Status.Phase == corev1.NamespaceTerminating {
			return ns, nil
		}
		upd := ns.DeepCopy()
		upd.Status.Phase = corev1.NamespaceTerminating
		out, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err == nil {
			return out, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("marking namespace %s terminating: %w", ns.Name, err)
		}
		if ns, err = c.refetch(ctx, ns); err != nil {
			return nil, err
		}
	}
}

// finalize removes the "kubernetes" finalizer through /finalize, retrying
// on conflicts.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	for {
		upd := ns.DeepCopy()
		upd.Spec.Finalizers = nil
		for _, f := range ns.Spec.Finalizers {
			if f != corev1.FinalizerKubernetes {
				upd.Spec.Finalizers = append(upd.Spec.Finalizers, f)
			}
		}
		_, err := c.client.CoreV1().Namespaces().Finalize(ctx, upd, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
		if ns, err = c.refetch(ctx, ns); err != nil {
			return err
		}
	}
}

// refetch reads ns again, failing if it was replaced by another namespace
// of the same name.
func (c *Controller) refetch(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	cur, err := c.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if cur.UID != ns.UID {
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), ns.Name)
	}
	return cur, nil
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}
