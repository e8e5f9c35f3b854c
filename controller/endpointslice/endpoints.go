package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

const (
	// EndpointsName is the Endpoints controller's name in the Manager
	// (kube-controller-manager calls it "endpoint").
	EndpointsName = "endpoint"
	// EndpointsEventSource is the component of its events.
	EndpointsEventSource = "endpoint-controller"
	// leaderElectionAnnotation marks Endpoints used as leader-election
	// locks by old components; they have no Service and must be left alone.
	leaderElectionAnnotation = "control-plane.alpha.kubernetes.io/leader"
)

// EndpointsController maintains the legacy core/v1 Endpoints object named
// after each Service with a selector, for clients that predate
// EndpointSlices.
type EndpointsController struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	log       *slog.Logger
	triggers  *triggerTracker
	stale     *staleVersions
}

var _ controller.Controller = (*EndpointsController)(nil)

// NewEndpointsFunc returns the constructor the Manager registers:
// m.Register(endpointslice.EndpointsName, endpointslice.NewEndpointsFunc()).
func NewEndpointsFunc() controller.NewFunc {
	return func(c *controller.Context) (controller.Controller, error) { return NewEndpoints(c) }
}

// NewEndpoints builds the Endpoints controller and registers its informers
// (Services, Pods, Endpoints) with c.Informers.
func NewEndpoints(c *controller.Context) (*EndpointsController, error) {
	svcInf := c.Informers.Core().V1().Services()
	podInf := c.Informers.Core().V1().Pods()
	epInf := c.Informers.Core().V1().Endpoints()
	ctl := &EndpointsController{
		client:    c.Client,
		services:  svcInf.Lister(),
		pods:      podInf.Lister(),
		endpoints: epInf.Lister(),
		queue:     controller.NewQueue[string](EndpointsName),
		recorder:  c.Recorder(EndpointsEventSource),
		log:       c.Logger,
		triggers:  newTriggerTracker(),
		stale:     newStaleVersions(),
	}
	if ctl.log == nil {
		ctl.log = slog.Default()
	}
	enqueue := func(key string) { ctl.queue.Add(key) }
	epHandler := cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if key, err := controller.KeyFunc(obj); err == nil {
			enqueue(key) // recreate Endpoints deleted behind our back
		}
	}}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{svcInf.Informer(), serviceKeyHandler(enqueue)},
		{podInf.Informer(), podHandler(ctl.services, enqueue)},
		{epInf.Informer(), epHandler},
	} {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("endpoints: event handler: %w", err)
		}
		ctl.synced = append(ctl.synced, h.inf.HasSynced)
	}
	return ctl, nil
}

// Name implements controller.Controller.
func (c *EndpointsController) Name() string { return EndpointsName }

// Run waits for the caches, queues every existing Endpoints once (so those
// whose Service went away while no controller ran are deleted) and syncs
// until ctx is done.
func (c *EndpointsController) Run(ctx context.Context, workers int) error {
	if err := controller.WaitForCacheSync(ctx, EndpointsName, c.synced...); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if list, err := c.endpoints.List(labels.Everything()); err == nil {
		for _, ep := range list {
			if _, lock := ep.Annotations[leaderElectionAnnotation]; !lock {
				c.queue.Add(ep.Namespace + "/" + ep.Name)
			}
		}
	}
	controller.RunWorkers(ctx, EndpointsName, workers, c.queue, c.sync, c.log)
	return nil
}

func (c *EndpointsController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting endpoints %s: %w", key, err)
		}
		c.triggers.forget(ns, name)
		c.stale.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting service %s: %w", key, err)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return fmt.Errorf("listing pods of %s: %w", key, err)
	}
	trigger := c.triggers.compute(svc, pods)
	subsets := desiredSubsets(svc, pods)

	cur, err := c.endpoints.Endpoints(ns).Get(name)
	create := apierrors.IsNotFound(err)
	switch {
	case create:
		cur = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	case err != nil:
		return fmt.Errorf("getting endpoints %s: %w", key, err)
	case c.stale.stale(key, cur.ResourceVersion):
		return fmt.Errorf("endpoints %s at resourceVersion %s: %w", key, cur.ResourceVersion, ErrStaleCache)
	}

	wantLabels := endpointsLabels(svc)
	over := truncate(subsets, MaxEndpointsPerEndpoints)
	_, marked := cur.Annotations[corev1.EndpointsOverCapacity]
	if !create && equality.Semantic.DeepEqual(cur.Subsets, subsets) && maps.Equal(cur.Labels, wantLabels) && marked == over {
		return nil
	}
	next := cur.DeepCopy()
	next.Subsets = subsets
	next.Labels = wantLabels
	setTrigger(&next.ObjectMeta, trigger)
	if over {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[corev1.EndpointsOverCapacity] = "truncated"
	} else {
		delete(next.Annotations, corev1.EndpointsOverCapacity)
	}

	if create {
		_, err = c.client.CoreV1().Endpoints(ns).Create(ctx, next, metav1.CreateOptions{})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		if err != nil {
			c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s: %v", key, err)
			return fmt.Errorf("creating endpoints %s: %w", key, err)
		}
		return nil
	}
	updated, err := c.client.CoreV1().Endpoints(ns).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s: %v", key, err)
		return fmt.Errorf("updating endpoints %s: %w", key, err)
	}
	if updated.ResourceVersion != cur.ResourceVersion {
		c.stale.replaced(key, cur.ResourceVersion)
	}
	return nil
}

// endpointsLabels are the Service's labels plus the headless label for a
// Service without a ClusterIP.
func endpointsLabels(svc *corev1.Service) map[string]string {
	out := make(map[string]string, len(svc.Labels)+1)
	maps.Copy(out, svc.Labels)
	delete(out, corev1.IsHeadlessService)
	if !hasClusterIP(svc) {
		out[corev1.IsHeadlessService] = ""
	}
	return out
}
