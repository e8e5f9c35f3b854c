package job

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in the controller manager.
const Name = "job"

// EventSource is the component named in the events the controller records.
const EventSource = "job-controller"

// Defaults of the options.
const (
	// DefaultBackoff is the delay before recreating a pod after the first
	// failure; it doubles with each further failure.
	DefaultBackoff = 10 * time.Second
	// DefaultMaxBackoff caps the delay (6 minutes, as documented for
	// Kubernetes).
	DefaultMaxBackoff = 6 * time.Minute
	// MaxUncountedPods bounds status.uncountedTerminatedPods (about 20 KB).
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync bounds the pod writes of one sync.
	MaxPodCreateDeletePerSync = 500
)

var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Option configures optional settings.
type Option func(*options) error

type options struct {
	backoff, maxBackoff time.Duration
	batch               time.Duration
}

// WithBackoff sets the pod recreation backoff after failures: base doubled
// per consecutive failure, capped at max.
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) error {
		if base <= 0 || max < base {
			return fmt.Errorf("job: backoff %s capped at %s: want 0 < base <= max", base, max)
		}
		o.backoff, o.maxBackoff = base, max
		return nil
	}
}

// WithSyncBatchPeriod coalesces the syncs pod events cause for one Job
// into one per period (Kubernetes uses 1 s; the default, 0, syncs at once).
func WithSyncBatchPeriod(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("job: sync batch period %s is negative", d)
		}
		o.batch = d
		return nil
	}
}

// Controller runs Jobs' pods to completion.
type Controller struct {
	client     kubernetes.Interface
	podControl controller.PodControl
	jobs       batchlisters.JobLister
	pods       corelisters.PodLister
	podIndex   cache.Indexer
	synced     []cache.InformerSynced
	clock      clock.PassiveClock
	recorder   record.EventRecorder
	log        *slog.Logger
	opts       options

	expectations *controller.UIDTrackingExpectations
	finalizers   *finalizerExpectations
	writes       *statusWrites
	backoff      *backoffStore

	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[string]
}

var _ controller.Controller = (*Controller)(nil)

// New returns the controller, registering job and pod informers in
// c.Informers.
func New(c *controller.Context, opts ...Option) (*Controller, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	o := options{backoff: DefaultBackoff, maxBackoff: DefaultMaxBackoff}
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
	jobInf := c.Informers.Batch().V1().Jobs()
	podInf := c.Informers.Core().V1().Pods()
	if err := controller.AddControllerUIDIndex(podInf.Informer()); err != nil {
		return nil, err
	}
	ctrl := &Controller{
		client:       c.Client,
		podControl:   &controller.RealPodControl{Client: c.Client, Recorder: rec},
		jobs:         jobInf.Lister(),
		pods:         podInf.Lister(),
		podIndex:     podInf.Informer().GetIndexer(),
		synced:       []cache.InformerSynced{jobInf.Informer().HasSynced, podInf.Informer().HasSynced},
		clock:        clk,
		recorder:     rec,
		log:          log,
		opts:         o,
		expectations: controller.NewUIDTrackingExpectations(clk),
		finalizers:   newFinalizerExpectations(),
		writes:       newStatusWrites(),
		backoff:      newBackoffStore(),
		queue:        controller.NewQueue[string]("job"),
		orphanQueue:  controller.NewQueue[string]("job_orphan_pod"),
	}
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueueJob,
		UpdateFunc: ctrl.updateJob,
		DeleteFunc: ctrl.deleteJob,
	}); err != nil {
		return nil, fmt.Errorf("job: adding job handler: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.addPod,
		UpdateFunc: ctrl.updatePod,
		DeleteFunc: func(obj any) { ctrl.deletePod(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("job: adding pod handler: %w", err)
	}
	return ctrl, nil
}

// Name implements controller.Controller.
func (c *Controller) Name() string { return Name }

// Run implements controller.Controller: workers sync Jobs, one more
// goroutine removes tracking finalizers from orphaned pods.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	defer c.orphanQueue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, c.synced...); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { controller.RunWorkers(ctx, Name+"-orphans", 1, c.orphanQueue, c.syncOrphanPod, c.log) })
	controller.RunWorkers(ctx, Name, workers, c.queue, c.sync, c.log)
	wg.Wait()
	return nil
}

func (c *Controller) enqueueJob(obj any) {
	key, err := controller.KeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

// enqueueJobBatched syncs a job soon (after the batch period) for pod
// events, coalescing bursts.
func (c *Controller) enqueueJobBatched(job *batchv1.Job) {
	key := job.Namespace + "/" + job.Name
	if c.opts.batch > 0 {
		c.queue.AddAfter(key, c.opts.batch)
		return
	}
	c.queue.Add(key)
}

func (c *Controller) updateJob(old, cur any) {
	oldJob, ok1 := old.(*batchv1.Job)
	curJob, ok2 := cur.(*batchv1.Job)
	if !ok1 || !ok2 {
		return
	}
	if curJob.UID != oldJob.UID {
		// Recreated under the same name: the old one's pods are orphans.
		c.cleanupPodFinalizers(oldJob)
	}
	c.enqueueJob(cur)
	// A changed active deadline, or a resumed job, restarts its timer.
	if curJob.Spec.ActiveDeadlineSeconds != nil && curJob.Status.StartTime != nil &&
		!reflect.DeepEqual(oldJob.Spec.ActiveDeadlineSeconds, curJob.Spec.ActiveDeadlineSeconds) {
		left := time.Duration(*curJob.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(curJob.Status.StartTime.Time)
		c.queue.AddAfter(curJob.Namespace+"/"+curJob.Name, max(left, 0))
	}
}

func (c *Controller) deleteJob(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	c.enqueueJob(job)
	c.cleanupPodFinalizers(job)
}

// cleanupPodFinalizers queues the pods of a deleted job that still have
// the tracking finalizer, so they can go.
func (c *Controller) cleanupPodFinalizers(job *batchv1.Job) {
	pods, err := controller.ByControllerUID[*corev1.Pod](c.podIndex, string(job.UID), job.Namespace)
	if err != nil {
		return
	}
	for _, p := range pods {
		if metav1.IsControlledBy(p, job) && hasTrackingFinalizer(p) {
			c.orphanQueue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// resolveControllerRef returns the job a controller reference names, if
// it is in the cache with that UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return nil
	}
	job, err := c.jobs.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// podJobs returns the jobs whose selector matches an orphan pod.
func (c *Controller) podJobs(pod *corev1.Pod) []*batchv1.Job {
	jobs, err := c.jobs.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, j := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, j)
	}
	return out
}
