package job

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
)

// staleHarness is a Job controller whose informers are never started: the
// test fills their caches, so it decides how far each one lags behind the
// API server (a real one, in process).
type staleHarness struct {
	t    *testing.T
	c    *Controller
	cl   *controllertest.Cluster
	jobs cache.Indexer
	pods cache.Indexer
}

func newStaleHarness(t *testing.T) *staleHarness {
	cl := controllertest.NewCluster(t)
	f := informers.NewSharedInformerFactory(cl.Client, 0)
	c, err := New(&controller.Context{Client: cl.Client, Informers: f, Clock: clocktesting.NewFakeClock(time.Now()),
		Recorder: func(string) record.EventRecorder { return record.NewFakeRecorder(100) }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { c.queue.ShutDown(); c.orphanQueue.ShutDown() })
	return &staleHarness{t: t, c: c, cl: cl,
		jobs: f.Batch().V1().Jobs().Informer().GetIndexer(), pods: f.Core().V1().Pods().Informer().GetIndexer()}
}

// refreshJob puts the API server's current Job into the cache.
func (h *staleHarness) refreshJob(name string) *batchv1.Job {
	j, err := h.cl.Client.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.t, err)
	require.NoError(h.t, h.jobs.Update(j))
	return j
}

// refreshPods puts the API server's current pods into the cache, through
// the controller's handlers as the informer would.
func (h *staleHarness) refreshPods() []corev1.Pod {
	l, err := h.cl.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(h.t, err)
	for i := range l.Items {
		p := &l.Items[i]
		old, ok, err := h.pods.Get(p)
		require.NoError(h.t, err)
		require.NoError(h.t, h.pods.Update(p))
		if ok {
			h.c.updatePod(old, p)
		} else {
			h.c.addPod(p)
		}
	}
	return l.Items
}

// succeededPod creates a pod of job, with the tracking finalizer, and
// marks it Succeeded.
func (h *staleHarness) succeededPod(job *batchv1.Job, name string) {
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: job.Spec.Template.Labels,
		Finalizers: []string{batchv1.JobTrackingFinalizer}, OwnerReferences: []metav1.OwnerReference{*controller.OwnerRef(job, controllerKind)}},
		Spec: job.Spec.Template.Spec}
	p, err := h.cl.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	require.NoError(h.t, err)
	p.Status.Phase = corev1.PodSucceeded
	_, err = h.cl.Client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(h.t, err)
}

// TestSyncWaitsForOwnStatusWrite is the extra pod next to a Complete Job:
// a sync counts the last pods and completes the Job, then the pod cache
// delivers the finalizer removals before the Job cache delivers the status
// writes that counted them. A sync on that Job must not take the pods for
// uncounted completions still to run.
func TestSyncWaitsForOwnStatusWrite(t *testing.T) {
	h := newStaleHarness(t)
	ctx := context.Background()
	job, err := h.cl.Client.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "done"},
		Spec: batchv1.JobSpec{Completions: ptr.To[int32](3), Parallelism: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range 3 {
		h.succeededPod(job, fmt.Sprintf("done-%d", i))
	}
	stale := h.refreshJob("done")
	h.refreshPods()
	key := jobKey(job)

	require.NoError(t, h.c.sync(ctx, key), "counts the three pods and completes the Job")
	fresh, err := h.cl.Client.BatchV1().Jobs("default").Get(ctx, "done", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, conditionTrue(fresh, batchv1.JobComplete), "status: %+v", fresh.Status)
	require.Equal(t, int32(3), fresh.Status.Succeeded)

	// The pod cache catches up (finalizers gone), the Job cache does not.
	for _, p := range h.refreshPods() {
		require.NotContains(t, p.Finalizers, batchv1.JobTrackingFinalizer)
	}
	require.NoError(t, h.jobs.Update(stale))
	syncErr := h.c.sync(ctx, key)
	pods, err := h.cl.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"done-0", "done-1", "done-2"}, podNames(pods.Items), "no pod created for completions that already happened")
	require.NoError(t, syncErr)

	// Once the Job cache delivers the write, syncs go on as usual.
	h.refreshJob("done")
	require.NoError(t, h.c.sync(ctx, key))
	pods, err = h.cl.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"done-0", "done-1", "done-2"}, podNames(pods.Items))
	_, tracked := h.c.writes.writes[key]
	assert.False(t, tracked, "the record goes once the cache caught up")
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// TestStatusWritesStale covers the record's rules.
func TestStatusWritesStale(t *testing.T) {
	now := time.Now()
	job := func(uid, rv string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u" + uid), ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name    string
		written *batchv1.Job
		cached  *batchv1.Job
		after   time.Duration
		stale   bool
	}{
		{name: "older cache", written: job("1", "10"), cached: job("1", "9"), stale: true},
		{name: "cache caught up", written: job("1", "10"), cached: job("1", "10")},
		{name: "cache newer", written: job("1", "10"), cached: job("1", "11")},
		{name: "another job of the name", written: job("1", "10"), cached: job("2", "3")},
		{name: "expired", written: job("1", "10"), cached: job("1", "9"), after: controller.ExpectationsTimeout},
		{name: "not comparable", written: job("1", "10"), cached: job("1", "x")},
		{name: "nothing written", cached: job("1", "9")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStatusWrites()
			if tc.written != nil {
				w.record("k", tc.written, now)
			}
			stale, left := w.stale("k", tc.cached, now.Add(tc.after))
			assert.Equal(t, tc.stale, stale)
			if stale {
				assert.Equal(t, controller.ExpectationsTimeout, left)
				return
			}
			_, kept := w.writes["k"]
			assert.False(t, kept)
		})
	}
}
