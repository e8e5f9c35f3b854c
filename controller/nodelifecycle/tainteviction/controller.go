package tainteviction

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/nodelifecycle"
)

// Name is the controller's name in the controller manager.
const Name = "taint-eviction-controller"

// EventSource is the component named in the events the controller records.
const EventSource = "taint-eviction-controller"

// DefaultRecheckInterval bounds how far ahead a pod is queued for its
// eviction time.
const DefaultRecheckInterval = 10 * time.Second

// Option configures optional settings.
type Option func(*options) error

type options struct{ recheck time.Duration }

// WithRecheckInterval sets the longest wall-time wait before a pod whose
// eviction is pending is examined again.
func WithRecheckInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("tainteviction: recheck interval %s must be positive", d)
		}
		o.recheck = d
		return nil
	}
}

// Controller evicts pods from nodes with NoExecute taints.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	podIndex cache.Indexer
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	clock    clock.PassiveClock
	recorder record.EventRecorder
	log      *slog.Logger
	opts     options
	queue    workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// firstSeen stamps NoExecute taints without timeAdded, by node.
	firstSeen map[string]map[taintKey]time.Time
}

type taintKey struct{ key, value string }

var _ controller.Controller = (*Controller)(nil)

// New returns the controller, registering pod and node informers in
// c.Informers.
func New(c *controller.Context, opts ...Option) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("tainteviction: %w", err)
	}
	o := options{recheck: DefaultRecheckInterval}
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
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	if err := nodelifecycle.AddPodsByNodeIndex(podInf.Informer()); err != nil {
		return nil, err
	}
	ctrl := &Controller{
		client: c.Client, pods: podInf.Lister(), podIndex: podInf.Informer().GetIndexer(), nodes: nodeInf.Lister(),
		synced: []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		clock:  clk, recorder: rec, log: log, opts: o,
		queue:     controller.NewQueue[string]("taint_eviction"),
		firstSeen: map[string]map[taintKey]time.Time{},
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.podChanged,
		UpdateFunc: func(_, cur any) { ctrl.podChanged(cur) },
	}); err != nil {
		return nil, fmt.Errorf("tainteviction: adding pod handler: %w", err)
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: ctrl.nodeChanged,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && equality.Semantic.DeepEqual(noExecute(o.Spec.Taints), noExecute(n.Spec.Taints)) {
				return
			}
			ctrl.nodeChanged(cur)
		},
		DeleteFunc: ctrl.nodeDeleted,
	}); err != nil {
		return nil, fmt.Errorf("tainteviction: adding node handler: %w", err)
	}
	return ctrl, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run implements controller.Controller.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, c.synced...); err != nil {
		return err
	}
	controller.RunWorkers(ctx, Name, workers, c.queue, c.sync, c.log)
	return nil
}

func (c *Controller) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	c.queue.Add(p.Namespace + "/" + p.Name)
}

func (c *Controller) nodeChanged(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	c.stampTaints(n)
	objs, err := c.podIndex.ByIndex(nodelifecycle.PodsByNodeIndex, n.Name)
	if err != nil {
		return
	}
	for _, o := range objs {
		c.podChanged(o)
	}
}

func (c *Controller) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		c.mu.Lock()
		delete(c.firstSeen, n.Name)
		c.mu.Unlock()
	}
}

// stampTaints remembers when NoExecute taints without timeAdded were first
// seen, and forgets taints that went away.
func (c *Controller) stampTaints(n *corev1.Node) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.firstSeen[n.Name]
	next := map[taintKey]time.Time{}
	for _, t := range noExecute(n.Spec.Taints) {
		k := taintKey{t.Key, t.Value}
		if at, ok := seen[k]; ok {
			next[k] = at
		} else {
			next[k] = now
		}
	}
	c.firstSeen[n.Name] = next
}

func (c *Controller) taintStart(node string, t corev1.Taint) time.Time {
	if t.TimeAdded != nil {
		return t.TimeAdded.Time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.firstSeen[node][taintKey{t.Key, t.Value}]; ok {
		return at
	}
	now := c.clock.Now()
	if c.firstSeen[node] == nil {
		c.firstSeen[node] = map[taintKey]time.Time{}
	}
	c.firstSeen[node][taintKey{t.Key, t.Value}] = now
	return now
}

// sync evicts one pod if its time has come, or queues it for then.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return nil
	}
	node, err := c.nodes.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	taints := noExecute(node.Spec.Taints)
	if len(taints) == 0 {
		return nil
	}
	starts := make([]time.Time, len(taints))
	for i, t := range taints {
		starts[i] = c.taintStart(node.Name, t)
	}
	at, evict := EvictionTime(taints, starts, pod.Spec.Tolerations)
	if !evict {
		return nil
	}
	if wait := at.Sub(c.clock.Now()); wait > 0 {
		return controller.RequeueAfter(min(wait, c.opts.recheck))
	}
	return c.evict(ctx, pod, node.Name)
}

// evict marks the pod as disrupted and deletes it.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod, node string) error {
	c.log.Info("evicting pod from tainted node", "pod", pod.Namespace+"/"+pod.Name, "node", node)
	c.recorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	p := pod.DeepCopy()
	setDisruptionTarget(p, metav1.NewTime(c.clock.Now()))
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		// The condition is informative; the eviction itself goes ahead.
		c.log.Debug("setting DisruptionTarget", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func setDisruptionTarget(p *corev1.Pod, now metav1.Time) {
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: now}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			p.Status.Conditions[i] = cond
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, cond)
}
