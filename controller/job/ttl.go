package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/controller"
)

// TTLName is the TTL-after-finished controller's name.
const TTLName = "ttl-after-finished"

// TTLController deletes finished Jobs spec.ttlSecondsAfterFinished after
// they finished (their Complete or Failed condition's transition), with
// foreground propagation so their pods go first, as Kubernetes'
// ttl-after-finished controller does. The decision is re-checked on a live
// read (the TTL may have been changed) and the delete carries the Job's UID
// as precondition.
type TTLController struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	synced cache.InformerSynced
	clock  clock.PassiveClock
	log    *slog.Logger
	queue  workqueue.TypedRateLimitingInterface[string]
	// recheck bounds how far ahead a job is queued for its expiry.
	recheck time.Duration
}

var _ controller.Controller = (*TTLController)(nil)

// DefaultTTLRecheck bounds the wall-time wait before an unexpired Job is
// looked at again.
const DefaultTTLRecheck = time.Minute

// NewTTLController returns the controller, registering a job informer.
// recheck of 0 means DefaultTTLRecheck.
func NewTTLController(c *controller.Context, recheck time.Duration) (*TTLController, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("job ttl: %w", err)
	}
	if recheck < 0 {
		return nil, fmt.Errorf("job ttl: recheck %s is negative", recheck)
	}
	if recheck == 0 {
		recheck = DefaultTTLRecheck
	}
	var clk clock.PassiveClock = c.Clock
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	inf := c.Informers.Batch().V1().Jobs()
	t := &TTLController{client: c.Client, jobs: inf.Lister(), synced: inf.Informer().HasSynced, clock: clk, log: log,
		queue: controller.NewQueue[string]("ttl_jobs_to_delete"), recheck: recheck}
	enqueue := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if ok && j.DeletionTimestamp == nil && j.Spec.TTLSecondsAfterFinished != nil && finished(j) {
			t.queue.Add(jobKey(j))
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		return nil, fmt.Errorf("job ttl: adding job handler: %w", err)
	}
	return t, nil
}

// Name implements controller.Controller.
func (t *TTLController) Name() string { return TTLName }

// Run implements controller.Controller.
func (t *TTLController) Run(ctx context.Context, workers int) error {
	defer t.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, TTLName, t.synced); err != nil {
		return err
	}
	controller.RunWorkers(ctx, TTLName, workers, t.queue, t.sync, t.log)
	return nil
}

// expiry returns when a finished job with a TTL expires.
func expiry(j *batchv1.Job) (time.Time, bool) {
	if j.Spec.TTLSecondsAfterFinished == nil || !finished(j) {
		return time.Time{}, false
	}
	var at time.Time
	for _, ct := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed} {
		if c := conditionTrue(j, ct); c != nil {
			at = c.LastTransitionTime.Time
		}
	}
	if j.Status.CompletionTime != nil && at.IsZero() {
		at = j.Status.CompletionTime.Time
	}
	return at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true
}

func (t *TTLController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := t.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if wait, ok := t.wait(cached); !ok || wait > 0 {
		if ok {
			return controller.RequeueAfter(min(wait, t.recheck))
		}
		return nil
	}
	// Expired by the cache: confirm on the live object.
	live, err := t.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job ttl: reading %s: %w", key, err)
	}
	if wait, ok := t.wait(live); !ok || wait > 0 {
		if ok {
			return controller.RequeueAfter(min(wait, t.recheck))
		}
		return nil
	}
	fg := metav1.DeletePropagationForeground
	uid := live.UID
	err = t.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("job ttl: deleting %s: %w", key, err)
	}
	t.log.Debug("deleted finished job after its TTL", "job", key)
	return nil
}

// wait returns how long until j expires; ok is false for jobs that never
// do (no TTL, not finished, being deleted).
func (t *TTLController) wait(j *batchv1.Job) (time.Duration, bool) {
	if j.DeletionTimestamp != nil {
		return 0, false
	}
	at, ok := expiry(j)
	if !ok {
		return 0, false
	}
	return at.Sub(t.clock.Now()), true
}
