package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in a Manager.
const Name = "deployment"

// Component is the source component of its events.
const Component = "deployment-controller"

// Kind is the GroupVersionKind owner references to a Deployment carry.
var Kind = appsv1.SchemeGroupVersion.WithKind("Deployment")

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the Deployment controller.
type Controller struct {
	ctx      *controller.Context
	log      *slog.Logger
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]

	dLister    appslisters.DeploymentLister
	rsLister   appslisters.ReplicaSetLister
	rsIndexer  cache.Indexer
	podIndexer cache.Indexer
	synced     []cache.InformerSynced
}

var _ controller.Controller = (*Controller)(nil)

// NewFunc returns the constructor to Register with a controller.Manager.
func NewFunc() controller.NewFunc {
	return func(c *controller.Context) (controller.Controller, error) { return New(c) }
}

// New builds the controller and registers its informers and handlers on
// c.Informers.
func New(c *controller.Context) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("deployment controller: %w", err)
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	dInf := c.Informers.Apps().V1().Deployments()
	rsInf := c.Informers.Apps().V1().ReplicaSets()
	podInf := c.Informers.Core().V1().Pods()
	for _, inf := range []cache.SharedIndexInformer{rsInf.Informer(), podInf.Informer()} {
		if err := controller.AddControllerUIDIndex(inf); err != nil {
			return nil, fmt.Errorf("deployment controller: %w", err)
		}
	}
	dc := &Controller{
		ctx:        c,
		log:        log,
		recorder:   c.Recorder(Component),
		queue:      controller.NewQueueWithClock[string](Name, c.Clock),
		dLister:    dInf.Lister(),
		rsLister:   rsInf.Lister(),
		rsIndexer:  rsInf.Informer().GetIndexer(),
		podIndexer: podInf.Informer().GetIndexer(),
	}
	h1, err := dInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    dc.enqueue,
		UpdateFunc: func(_, cur any) { dc.enqueue(cur) },
		DeleteFunc: dc.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("deployment controller: watching deployments: %w", err)
	}
	h2, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    dc.addReplicaSet,
		UpdateFunc: dc.updateReplicaSet,
		DeleteFunc: dc.deleteReplicaSet,
	})
	if err != nil {
		return nil, fmt.Errorf("deployment controller: watching replicasets: %w", err)
	}
	h3, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: dc.deletePod})
	if err != nil {
		return nil, fmt.Errorf("deployment controller: watching pods: %w", err)
	}
	dc.synced = []cache.InformerSynced{h1.HasSynced, h2.HasSynced, h3.HasSynced}
	return dc, nil
}

// Name implements controller.Controller.
func (dc *Controller) Name() string { return Name }

// Run implements controller.Controller.
func (dc *Controller) Run(ctx context.Context, workers int) error {
	defer dc.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, dc.synced...); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	controller.RunWorkers(ctx, Name, workers, dc.queue, dc.sync, dc.log)
	return nil
}

func (dc *Controller) enqueue(obj any) {
	key, err := controller.KeyFunc(obj)
	if err != nil {
		dc.log.Error("cannot key deployment", "err", err)
		return
	}
	dc.queue.Add(key)
}

func (dc *Controller) enqueueAfter(d *appsv1.Deployment, after time.Duration) {
	if key, err := controller.KeyFunc(d); err == nil {
		dc.queue.AddAfter(key, after)
	}
}

// resolveRef returns the Deployment ref points to, if cached with its UID.
func (dc *Controller) resolveRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != Kind.Kind || ref.APIVersion != Kind.GroupVersion().String() {
		return nil
	}
	d, err := dc.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// deploymentsFor returns the Deployments whose selector matches an orphan
// ReplicaSet (candidates to adopt it).
func (dc *Controller) deploymentsFor(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := dc.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range all {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func (dc *Controller) addReplicaSet(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.DeletionTimestamp != nil {
		dc.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.resolveRef(rs.Namespace, ref); d != nil {
			dc.enqueue(d)
		}
		return
	}
	for _, d := range dc.deploymentsFor(rs) {
		dc.enqueue(d)
	}
}

func (dc *Controller) updateReplicaSet(oldObj, curObj any) {
	old, cur := oldObj.(*appsv1.ReplicaSet), curObj.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := (curRef == nil) != (oldRef == nil) || (curRef != nil && oldRef != nil && curRef.UID != oldRef.UID)
	if refChanged && oldRef != nil {
		if d := dc.resolveRef(old.Namespace, oldRef); d != nil {
			dc.enqueue(d)
		}
	}
	if curRef != nil {
		if d := dc.resolveRef(cur.Namespace, curRef); d != nil {
			dc.enqueue(d)
		}
		return
	}
	if refChanged || !labels.Equals(old.Labels, cur.Labels) {
		for _, d := range dc.deploymentsFor(cur) {
			dc.enqueue(d)
		}
	}
}

func (dc *Controller) deleteReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if rs, ok = tomb.Obj.(*appsv1.ReplicaSet); !ok {
			return
		}
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.resolveRef(rs.Namespace, ref); d != nil {
			dc.enqueue(d)
		}
	}
}

// deletePod wakes a Recreate Deployment waiting for its old pods to go.
func (dc *Controller) deletePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := dc.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	dref := metav1.GetControllerOf(rs)
	if dref == nil {
		return
	}
	if d := dc.resolveRef(rs.Namespace, dref); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		dc.enqueue(d)
	}
}
