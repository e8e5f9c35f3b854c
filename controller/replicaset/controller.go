package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in a Manager.
const Name = "replicaset"

// Component is the source component of its events.
const Component = "replicaset-controller"

// DefaultBurstReplicas caps how many pods one sync creates or deletes
// (Kubernetes' 500).
const DefaultBurstReplicas = 500

// Kind is the GroupVersionKind owner references to a ReplicaSet carry.
var Kind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet controller.
type Controller struct {
	ctx          *controller.Context
	log          *slog.Logger
	burst        int
	podControl   controller.PodControl
	expectations *controller.UIDTrackingExpectations
	queue        workqueue.TypedRateLimitingInterface[string]

	rsLister   appslisters.ReplicaSetLister
	rsIndexer  cache.Indexer
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced
	written    lastWrites // the last status writes (coalesce.go)
	// pendingDelay delays the syncs of pod changes while expectations
	// are pending (coalesce.go).
	pendingDelay time.Duration
}

var _ controller.Controller = (*Controller)(nil)

type options struct {
	burst        int
	podControl   controller.PodControl
	pendingDelay time.Duration
}

// Option configures the controller.
type Option func(*options) error

// WithBurstReplicas caps the pods created or deleted per sync.
func WithBurstReplicas(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("burst replicas %d must be positive", n)
		}
		o.burst = n
		return nil
	}
}

// WithPendingSyncDelay sets how long a pod change waits to sync its
// ReplicaSet while that ReplicaSet still expects pod creations or
// deletions (default DefaultPendingSyncDelay; 0 syncs at once, as
// Kubernetes' controller does). See coalesce.go.
func WithPendingSyncDelay(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("pending sync delay %s must not be negative", d)
		}
		o.pendingDelay = d
		return nil
	}
}

// WithPodControl replaces the API pod writer (tests).
func WithPodControl(pc controller.PodControl) Option {
	return func(o *options) error {
		if pc == nil {
			return errors.New("nil PodControl")
		}
		o.podControl = pc
		return nil
	}
}

// NewFunc returns the constructor to Register with a controller.Manager.
func NewFunc(opts ...Option) controller.NewFunc {
	return func(c *controller.Context) (controller.Controller, error) { return New(c, opts...) }
}

// New builds the controller and registers its informers and handlers on
// c.Informers.
func New(c *controller.Context, opts ...Option) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("replicaset controller: %w", err)
	}
	o := options{burst: DefaultBurstReplicas, pendingDelay: DefaultPendingSyncDelay}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("replicaset controller: %w", err)
		}
	}
	if o.podControl == nil {
		o.podControl = &controller.RealPodControl{Client: c.Client, Recorder: c.Recorder(Component)}
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	rsInf := c.Informers.Apps().V1().ReplicaSets()
	podInf := c.Informers.Core().V1().Pods()
	if err := controller.AddControllerUIDIndex(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("replicaset controller: %w", err)
	}
	if err := controller.AddControllerUIDIndex(rsInf.Informer()); err != nil {
		return nil, fmt.Errorf("replicaset controller: %w", err)
	}
	rc := &Controller{
		ctx:          c,
		log:          log,
		burst:        o.burst,
		pendingDelay: o.pendingDelay,
		podControl:   o.podControl,
		expectations: controller.NewUIDTrackingExpectations(c.Clock),
		queue:        controller.NewQueueWithClock[string](Name, c.Clock),
		rsLister:     rsInf.Lister(),
		rsIndexer:    rsInf.Informer().GetIndexer(),
		podLister:    podInf.Lister(),
		podIndexer:   podInf.Informer().GetIndexer(),
	}
	h1, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { rc.enqueue(obj) },
		UpdateFunc: func(_, cur any) { rc.enqueue(cur) },
		DeleteFunc: rc.deleteRS,
	})
	if err != nil {
		return nil, fmt.Errorf("replicaset controller: watching replicasets: %w", err)
	}
	h2, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rc.addPod,
		UpdateFunc: rc.updatePod,
		DeleteFunc: rc.deletePod,
	})
	if err != nil {
		return nil, fmt.Errorf("replicaset controller: watching pods: %w", err)
	}
	rc.synced = []cache.InformerSynced{h1.HasSynced, h2.HasSynced}
	return rc, nil
}

// Name implements controller.Controller.
func (rc *Controller) Name() string { return Name }

// Run implements controller.Controller.
func (rc *Controller) Run(ctx context.Context, workers int) error {
	defer rc.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, rc.synced...); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	controller.RunWorkers(ctx, Name, workers, rc.queue, rc.sync, rc.log)
	return nil
}

func (rc *Controller) enqueue(obj any) {
	key, err := controller.KeyFunc(obj)
	if err != nil {
		rc.log.Error("cannot key replicaset", "err", err)
		return
	}
	rc.queue.Add(key)
}

func (rc *Controller) enqueueAfter(rs *appsv1.ReplicaSet, d time.Duration) {
	key, err := controller.KeyFunc(rs)
	if err != nil {
		return
	}
	rc.queue.AddAfter(key, d)
}

func (rc *Controller) deleteRS(obj any) {
	key, err := controller.KeyFunc(obj)
	if err != nil {
		return
	}
	rc.expectations.Delete(key)
	rc.written.forget(key)
	rc.queue.Add(key)
}

// resolveRef returns the ReplicaSet ref points to, if it is in the cache
// with the same UID.
func (rc *Controller) resolveRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != Kind.Kind || ref.APIVersion != Kind.GroupVersion().String() {
		return nil
	}
	rs, err := rc.rsLister.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// matchingReplicaSets returns the ReplicaSets of the pod's namespace whose
// selector matches it (candidates to adopt an orphan).
func (rc *Controller) matchingReplicaSets(pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := rc.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, rs)
	}
	return out
}

func (rc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen already terminating (e.g. after a restart): a deletion.
		rc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		rs := rc.resolveRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key, _ := controller.KeyFunc(rs)
		rc.expectations.CreationObserved(key)
		rc.queuePodChange(key)
		return
	}
	for _, rs := range rc.matchingReplicaSets(pod) {
		rc.enqueue(rs)
	}
}

func (rc *Controller) updatePod(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !labels.Equals(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// Count a graceful deletion now so the replacement starts at once;
		// the pod stays in the cache until its kubelet finishes.
		rc.deletePod(cur)
		if labelsChanged {
			rc.deletePod(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := (curRef == nil) != (oldRef == nil) || (curRef != nil && oldRef != nil && curRef.UID != oldRef.UID)
	if refChanged && oldRef != nil {
		if rs := rc.resolveRef(old.Namespace, oldRef); rs != nil {
			rc.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := rc.resolveRef(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		if key, err := controller.KeyFunc(rs); err == nil {
			if !refChanged && !labelsChanged && unchangedForSync(old, cur) && !rc.expectations.Satisfied(key) {
				return // creations or deletions still expected: see coalesce.go
			}
			rc.queuePodChange(key)
		}
		// A pod that just became ready becomes available minReadySeconds
		// later, and nothing else will wake the ReplicaSet then.
		if rs.Spec.MinReadySeconds > 0 && !controller.IsPodReady(old) && controller.IsPodReady(cur) {
			rc.enqueueAfter(rs, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		for _, rs := range rc.matchingReplicaSets(cur) {
			rc.enqueue(rs)
		}
	}
}

func (rc *Controller) deletePod(obj any) {
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
	if ref == nil {
		return
	}
	rs := rc.resolveRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, _ := controller.KeyFunc(rs)
	rc.expectations.DeletionObserved(key, controller.PodKey(pod))
	rc.queuePodChange(key)
}
