package job_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/job"
)

// nudge touches the job so the controller syncs it again (after a fake
// clock step; the controller's own timers run on wall time).
func nudge(t *testing.T, c *cluster, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/nudge":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
	_, err := c.client.BatchV1().Jobs("default").Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// TestActiveDeadline: a job running longer than activeDeadlineSeconds
// fails with DeadlineExceeded, its pods deleted (and counted failed); the
// Failed condition waits until they are gone.
func TestActiveDeadline(t *testing.T) {
	c := newCluster(t)
	clk := testingclock.NewFakeClock(time.Now())
	startKubelet(t, c, clk.Now, always(outcome{}))
	runJobs(t, c, clk)
	newJob(t, c, "slow", parallelism(2), completions(2), func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) })
	eventually(t, "2 active", func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, "slow", metav1.GetOptions{})
		return err == nil && j.Status.Active == 2 && j.Status.StartTime != nil, err
	})
	clk.Step(31 * time.Second)
	nudge(t, c, "slow")
	j := waitCondition(t, c, "slow", batchv1.JobFailed)
	f := condition(j, batchv1.JobFailed)
	assert.Equal(t, "DeadlineExceeded", f.Reason)
	assert.Equal(t, "Job was active longer than specified deadline", f.Message)
	assert.EqualValues(t, 2, j.Status.Failed)
	assert.EqualValues(t, 0, j.Status.Active)
	assert.Equal(t, ptr.To[int32](0), j.Status.Terminating, "Failed only once no pod is terminating")
	assert.Empty(t, jobPods(t, c, j), "the kubelet confirmed the deletions")
}

// TestBackoffDelay: after a failure the next pod waits 10 s (by the
// controller's clock), after the second 20 s.
func TestBackoffDelay(t *testing.T) {
	c := newCluster(t)
	clk := testingclock.NewFakeClock(time.Now())
	startKubelet(t, c, clk.Now, always(outcome{phase: corev1.PodFailed}))
	runJobs(t, c, clk, job.WithBackoff(10*time.Second, 6*time.Minute))
	j := newJob(t, c, "flaky", backoffLimit(5))

	for i, wait := range []time.Duration{10 * time.Second, 20 * time.Second} {
		failures := int32(i + 1)
		eventually(t, fmt.Sprintf("%d failures counted", failures), func(ctx context.Context) (bool, error) {
			j, err := c.client.BatchV1().Jobs("default").Get(ctx, "flaky", metav1.GetOptions{})
			return err == nil && j.Status.Failed == failures, err
		})
		// The sync that counted the failure decided not to create a pod yet.
		nudge(t, c, "flaky")
		clk.Step(wait - time.Second)
		nudge(t, c, "flaky")
		assert.Len(t, jobPods(t, c, j), i+1, "still backing off after %s", wait-time.Second)
		clk.Step(time.Second)
		nudge(t, c, "flaky")
		eventually(t, "a new pod after the backoff", func(ctx context.Context) (bool, error) {
			return len(jobPods(t, c, j)) == i+2, nil
		})
	}
}

// TestIndexed: each pod gets its index (annotation, label, hostname, env);
// the job completes when every index succeeded.
func TestIndexed(t *testing.T) {
	c := newCluster(t)
	startKubelet(t, c, time.Now, always(outcome{phase: corev1.PodSucceeded}))
	runJobs(t, c, nil)
	newJob(t, c, "sharded", completions(4), parallelism(2), func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	})
	j := waitCondition(t, c, "sharded", batchv1.JobComplete)
	assert.Equal(t, "0-3", j.Status.CompletedIndexes)
	assert.EqualValues(t, 4, j.Status.Succeeded)
	seen := map[string]bool{}
	for _, p := range jobPods(t, c, j) {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		seen[ix] = true
		assert.Equal(t, ix, p.Labels[batchv1.JobCompletionIndexAnnotation])
		assert.Equal(t, "sharded-"+ix, p.Spec.Hostname)
		assert.Regexp(t, "^sharded-"+ix+"-[a-z0-9]{5}$", p.Name)
		require.NotEmpty(t, p.Spec.Containers[0].Env)
		env := p.Spec.Containers[0].Env[len(p.Spec.Containers[0].Env)-1]
		assert.Equal(t, job.EnvCompletionIndex, env.Name)
		assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", env.ValueFrom.FieldRef.FieldPath)
	}
	assert.Equal(t, map[string]bool{"0": true, "1": true, "2": true, "3": true}, seen)
}

// TestSuspend: a suspended job runs nothing and says so; resuming starts it.
func TestSuspend(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	startKubelet(t, c, time.Now, always(outcome{phase: corev1.PodSucceeded}))
	runJobs(t, c, nil)
	j := newJob(t, c, "later", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	j = waitCondition(t, c, "later", batchv1.JobSuspended)
	s := condition(j, batchv1.JobSuspended)
	assert.Equal(t, [2]string{"JobSuspended", "Job suspended"}, [2]string{s.Reason, s.Message})
	assert.Empty(t, jobPods(t, c, j))
	assert.Nil(t, j.Status.StartTime)

	j.Spec.Suspend = ptr.To(false)
	_, err := c.client.BatchV1().Jobs("default").Update(ctx, j, metav1.UpdateOptions{})
	require.NoError(t, err)
	j = waitCondition(t, c, "later", batchv1.JobComplete)
	for _, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobSuspended {
			assert.Equal(t, corev1.ConditionFalse, cond.Status)
			assert.Equal(t, "JobResumed", cond.Reason)
		}
	}
	assert.NotNil(t, j.Status.StartTime)
}

// TestAdoptionAndOrphans: a job with a manual selector adopts a matching
// orphan pod (owner reference and tracking finalizer); when the job is
// deleted without cascading, its pods lose the finalizer.
func TestAdoptionAndOrphans(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	startKubelet(t, c, time.Now, always(outcome{}))
	orphan, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{"batch": "manual"}},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	runJobs(t, c, nil)
	j := newJob(t, c, "manual", func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "manual"}}
		j.Spec.Template.Labels = map[string]string{"batch": "manual"}
	})
	eventually(t, "orphan adopted", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "stray", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == j.UID && p.Finalizers != nil && p.Finalizers[0] == batchv1.JobTrackingFinalizer, nil
	})
	eventually(t, "the adopted pod is the job's one active pod", func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, "manual", metav1.GetOptions{})
		return err == nil && j.Status.Active == 1, err
	})

	orphanPolicy := metav1.DeletePropagationOrphan
	require.NoError(t, c.client.BatchV1().Jobs("default").Delete(ctx, "manual", metav1.DeleteOptions{PropagationPolicy: &orphanPolicy}))
	// No garbage collector runs: the orphan finalizer keeps the job until
	// removed by hand.
	_, err = c.client.BatchV1().Jobs("default").Patch(ctx, "manual", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, "tracking finalizer removed from the dead job's pod", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "stray", metav1.GetOptions{})
		return err == nil && len(p.Finalizers) == 0, err
	})
	p, err := c.client.CoreV1().Pods("default").Get(ctx, "stray", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, orphan.UID, p.UID)
}

func TestOptionsValidate(t *testing.T) {
	c := newCluster(t)
	m, err := controller.NewManager(controller.ManagerConfig{Client: c.client})
	require.NoError(t, err)
	for _, o := range []job.Option{job.WithBackoff(0, time.Second), job.WithBackoff(time.Minute, time.Second), job.WithSyncBatchPeriod(-1)} {
		_, err := job.New(m.Context(), o)
		assert.Error(t, err)
	}
	_, err = job.New(nil)
	assert.Error(t, err)
}
