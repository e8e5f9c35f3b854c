package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

const (
	// Name is the EndpointSlice controller's name in the Manager (as in
	// kube-controller-manager's --controllers).
	Name = "endpointslice"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
	// slices this controller manages: Kubernetes' own, so kubectl, the
	// proxy and other consumers treat podkit's slices exactly like
	// kube-controller-manager's.
	ManagedBy = "endpointslice-controller.k8s.io"
	// EventSource is the component of the events it records.
	EventSource = "endpoint-slice-controller"
	// DefaultMaxEndpointsPerSlice is Kubernetes' --max-endpoints-per-slice
	// default.
	DefaultMaxEndpointsPerSlice = 100
	// MaxEndpointsPerSliceLimit is the API's limit of endpoints per slice.
	MaxEndpointsPerSliceLimit = 1000
)

// ErrStaleCache is wrapped by a sync that found the informer cache behind
// the controller's own writes; the key is retried with backoff.
var ErrStaleCache = errors.New("endpointslice informer cache is behind the controller's writes")

// Config configures the EndpointSlice controller.
type Config struct {
	// MaxEndpointsPerSlice caps the endpoints of one slice (default
	// DefaultMaxEndpointsPerSlice, at most MaxEndpointsPerSliceLimit).
	MaxEndpointsPerSlice int
}

// Controller publishes, for every Service with a selector, EndpointSlices
// listing the pods the selector matches.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *slog.Logger
	max      int
	tracker  *sliceTracker
	triggers *triggerTracker
}

var _ controller.Controller = (*Controller)(nil)

// NewFunc returns the constructor the Manager registers:
// m.Register(endpointslice.Name, endpointslice.NewFunc(cfg)).
func NewFunc(cfg Config) controller.NewFunc {
	return func(c *controller.Context) (controller.Controller, error) { return New(c, cfg) }
}

// New builds the controller and registers its informers (Services, Pods,
// Nodes for zones, EndpointSlices) with c.Informers.
func New(c *controller.Context, cfg Config) (*Controller, error) {
	switch {
	case cfg.MaxEndpointsPerSlice == 0:
		cfg.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	case cfg.MaxEndpointsPerSlice < 1 || cfg.MaxEndpointsPerSlice > MaxEndpointsPerSliceLimit:
		return nil, fmt.Errorf("endpointslice: MaxEndpointsPerSlice %d outside 1..%d", cfg.MaxEndpointsPerSlice, MaxEndpointsPerSliceLimit)
	}
	svcInf := c.Informers.Core().V1().Services()
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	sliceInf := c.Informers.Discovery().V1().EndpointSlices()
	ctl := &Controller{
		client:   c.Client,
		services: svcInf.Lister(),
		pods:     podInf.Lister(),
		nodes:    nodeInf.Lister(),
		slices:   sliceInf.Lister(),
		queue:    controller.NewQueue[string](Name),
		recorder: c.Recorder(EventSource),
		log:      c.Logger,
		max:      cfg.MaxEndpointsPerSlice,
		tracker:  newSliceTracker(),
		triggers: newTriggerTracker(),
	}
	if ctl.log == nil {
		ctl.log = slog.Default()
	}
	enqueue := func(key string) { ctl.queue.Add(key) }
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{svcInf.Informer(), serviceKeyHandler(enqueue)},
		{podInf.Informer(), podHandler(ctl.services, enqueue)},
		{sliceInf.Informer(), ctl.sliceHandler()},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("endpointslice: event handler: %w", err)
		}
		ctl.synced = append(ctl.synced, h.inf.HasSynced)
	}
	ctl.synced = append(ctl.synced, nodeInf.Informer().HasSynced)
	return ctl, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run waits for the caches and syncs Services with workers goroutines until
// ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if err := controller.WaitForCacheSync(ctx, Name, c.synced...); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	controller.RunWorkers(ctx, Name, workers, c.queue, c.sync, c.log)
	return nil
}

// sliceHandler enqueues a slice's Service when a managed slice changed in
// a way the controller did not write itself (edited or deleted by someone
// else, or seen at start-up).
func (c *Controller) sliceHandler() cache.ResourceEventHandlerFuncs {
	enqueue := func(es *discoveryv1.EndpointSlice) {
		if name := es.Labels[discoveryv1.LabelServiceName]; name != "" {
			c.queue.Add(es.Namespace + "/" + name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if es := sliceOf(obj); managed(es) && !c.tracker.ours(es) {
				enqueue(es)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := sliceOf(oldObj), sliceOf(newObj)
			if old == nil || cur == nil {
				return
			}
			if managed(old) && (!managed(cur) || old.Labels[discoveryv1.LabelServiceName] != cur.Labels[discoveryv1.LabelServiceName]) {
				enqueue(old) // taken away from the Service: the Service needs a replacement
			}
			if managed(cur) && !c.tracker.ours(cur) {
				enqueue(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if es := sliceOf(obj); managed(es) && !c.tracker.deleted(es) {
				enqueue(es)
			}
		},
	}
}

func sliceOf(obj any) *discoveryv1.EndpointSlice {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	es, _ := obj.(*discoveryv1.EndpointSlice)
	return es
}

func managed(es *discoveryv1.EndpointSlice) bool {
	return es != nil && es.Labels[discoveryv1.LabelManagedBy] == ManagedBy && es.Labels[discoveryv1.LabelServiceName] != ""
}

// managedSelector selects the slices this controller manages for a Service.
func managedSelector(service string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: ManagedBy})
}

// sync converges the slices of the Service key.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never gets better
	}
	cached, err := c.slices.EndpointSlices(ns).List(managedSelector(name))
	if err != nil {
		return fmt.Errorf("listing endpointslices of %s: %w", key, err)
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector removes them too (owner references); doing
		// it here keeps a cluster without one clean.
		c.triggers.forget(ns, name)
		c.tracker.forget(ns, name)
		return c.apply(ctx, key, nil, plan{del: cached})
	}
	if err != nil {
		return fmt.Errorf("getting service %s: %w", key, err)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil // endpoints of such Services are not this controller's
	}
	var live []*discoveryv1.EndpointSlice
	for _, es := range cached {
		if es.DeletionTimestamp == nil {
			live = append(live, es)
		}
	}
	if c.tracker.stale(svc, live) {
		return fmt.Errorf("service %s: %w", key, ErrStaleCache)
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return fmt.Errorf("listing pods of %s: %w", key, err)
	}
	trigger := c.triggers.compute(svc, pods)
	p := planSlices(svc, desiredGroups(svc, pods, c.zoneOf), live, c.max, trigger)
	return c.apply(ctx, key, svc, p)
}

func (c *Controller) zoneOf(node string) string {
	n, err := c.nodes.Get(node)
	if err != nil {
		return ""
	}
	return n.Labels[corev1.LabelTopologyZone]
}

// apply writes p; svc (nil once deleted) receives a warning event when a
// write fails.
func (c *Controller) apply(ctx context.Context, key string, svc *corev1.Service, p plan) error {
	if p.empty() {
		return nil
	}
	var errs []error
	for _, es := range p.create {
		created, err := c.client.DiscoveryV1().EndpointSlices(es.Namespace).Create(ctx, es, metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // nothing can be created there any more
			}
			errs = append(errs, fmt.Errorf("creating endpointslice for %s: %w", key, err))
			continue
		}
		c.tracker.wrote(created)
	}
	for _, es := range p.update {
		updated, err := c.client.DiscoveryV1().EndpointSlices(es.Namespace).Update(ctx, es, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("updating endpointslice %s/%s: %w", es.Namespace, es.Name, err))
			continue
		}
		c.tracker.wrote(updated)
	}
	for _, es := range p.del {
		uid := es.UID
		err := c.client.DiscoveryV1().EndpointSlices(es.Namespace).Delete(ctx, es.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting endpointslice %s/%s: %w", es.Namespace, es.Name, err))
			continue
		}
		if svc != nil {
			c.tracker.deleting(es)
		}
	}
	err := errors.Join(errs...)
	if err != nil && svc != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s: %v", key, err)
	}
	c.log.Debug("synced endpointslices", "service", key, "created", len(p.create), "updated", len(p.update), "deleted", len(p.del), "err", err)
	return err
}
