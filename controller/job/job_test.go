package job_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/job"
)

func runJobs(t *testing.T, c *cluster, clk clock.Clock, opts ...job.Option) {
	t.Helper()
	opts = append([]job.Option{job.WithBackoff(10*time.Millisecond, 40*time.Millisecond)}, opts...)
	c.run(t, map[string]controller.NewFunc{
		job.Name: func(ctx *controller.Context) (controller.Controller, error) { return job.New(ctx, opts...) },
	}, func(cfg *controller.ManagerConfig) {
		if clk != nil {
			cfg.Clock = clk
		}
	})
}

func always(o outcome) func(*corev1.Pod) outcome { return func(*corev1.Pod) outcome { return o } }

type jobOpt func(*batchv1.Job)

func newJob(t *testing.T, c *cluster, name string, opts ...jobOpt) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		}}},
	}
	for _, o := range opts {
		o(j)
	}
	j, err := c.client.BatchV1().Jobs("default").Create(context.Background(), j, metav1.CreateOptions{})
	require.NoError(t, err)
	return j
}

func completions(n int32) jobOpt  { return func(j *batchv1.Job) { j.Spec.Completions = ptr.To(n) } }
func parallelism(n int32) jobOpt  { return func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To(n) } }
func backoffLimit(n int32) jobOpt { return func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To(n) } }
func restartPolicy(p corev1.RestartPolicy) jobOpt {
	return func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = p }
}

func getJob(t *testing.T, c *cluster, name string) *batchv1.Job {
	t.Helper()
	j, err := c.client.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return j
}

func jobPods(t *testing.T, c *cluster, j *batchv1.Job) []corev1.Pod {
	t.Helper()
	l, err := c.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{batchv1.ControllerUidLabel: string(j.UID)}.String()})
	require.NoError(t, err)
	return l.Items
}

func condition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func waitCondition(t *testing.T, c *cluster, name string, typ batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	eventually(t, fmt.Sprintf("job %s %s", name, typ), func(ctx context.Context) (bool, error) {
		var err error
		j, err = c.client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && condition(j, typ) != nil, err
	})
	return j
}

// TestCompletionsAndParallelism: completions 3 with parallelism 2 runs at
// most 2 pods at a time, labelled and named as Kubernetes does, tracked
// with the finalizer, and completes with Kubernetes' status.
func TestCompletionsAndParallelism(t *testing.T) {
	c := newCluster(t)
	k := startKubelet(t, c, time.Now, always(outcome{phase: corev1.PodSucceeded}))
	runJobs(t, c, nil)
	j := newJob(t, c, "pi", completions(3), parallelism(2))

	j = waitCondition(t, c, "pi", batchv1.JobComplete)
	assert.LessOrEqual(t, k.MaxRunning(), 2, "parallelism 2")
	assert.EqualValues(t, 3, j.Status.Succeeded)
	assert.EqualValues(t, 0, j.Status.Failed)
	assert.EqualValues(t, 0, j.Status.Active)
	assert.Equal(t, ptr.To[int32](0), j.Status.Ready)
	assert.Equal(t, ptr.To[int32](0), j.Status.Terminating)
	require.NotNil(t, j.Status.StartTime)
	require.NotNil(t, j.Status.CompletionTime)
	assert.False(t, j.Status.CompletionTime.Before(j.Status.StartTime))
	assert.Empty(t, j.Status.UncountedTerminatedPods.Succeeded)
	complete := condition(j, batchv1.JobComplete)
	assert.Equal(t, "CompletionsReached", complete.Reason)
	assert.Equal(t, "Reached expected number of succeeded pods", complete.Message)
	assert.NotNil(t, condition(j, batchv1.JobSuccessCriteriaMet), "the interim condition stays")

	pods := jobPods(t, c, j)
	require.Len(t, pods, 3)
	for _, p := range pods {
		assert.Equal(t, corev1.PodSucceeded, p.Status.Phase)
		assert.True(t, strings.HasPrefix(p.Name, "pi-") && len(p.Name) == len("pi-")+5, "name %q is <job>-<random>", p.Name)
		assert.Equal(t, "pi", p.Labels["job-name"])
		assert.Equal(t, "pi", p.Labels[batchv1.JobNameLabel])
		assert.Equal(t, string(j.UID), p.Labels["controller-uid"])
		assert.Equal(t, string(j.UID), p.Labels[batchv1.ControllerUidLabel])
		ref := metav1.GetControllerOf(&p)
		require.NotNil(t, ref)
		assert.Equal(t, j.UID, ref.UID)
		assert.True(t, *ref.BlockOwnerDeletion)
		assert.NotContains(t, p.Finalizers, batchv1.JobTrackingFinalizer, "finalizer removed once counted")
	}
}

// TestTrackingFinalizerWhileRunning: running pods carry the finalizer.
func TestTrackingFinalizerWhileRunning(t *testing.T) {
	c := newCluster(t)
	startKubelet(t, c, time.Now, always(outcome{}))
	runJobs(t, c, nil)
	j := newJob(t, c, "long", parallelism(2), completions(4))
	eventually(t, "2 ready pods", func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, "long", metav1.GetOptions{})
		return err == nil && j.Status.Ready != nil && *j.Status.Ready == 2 && j.Status.Active == 2, err
	})
	for _, p := range jobPods(t, c, j) {
		assert.Contains(t, p.Finalizers, batchv1.JobTrackingFinalizer)
	}
}

// TestBackoffLimit: with restartPolicy Never every failed pod counts; the
// job fails once failures exceed backoffLimit.
func TestBackoffLimit(t *testing.T) {
	c := newCluster(t)
	startKubelet(t, c, time.Now, always(outcome{phase: corev1.PodFailed}))
	runJobs(t, c, nil)
	newJob(t, c, "doomed", backoffLimit(2))
	j := waitCondition(t, c, "doomed", batchv1.JobFailed)
	assert.EqualValues(t, 3, j.Status.Failed, "backoffLimit 2: the third failure fails the job")
	assert.EqualValues(t, 0, j.Status.Active)
	assert.EqualValues(t, 0, j.Status.Succeeded)
	failed := condition(j, batchv1.JobFailed)
	assert.Equal(t, "BackoffLimitExceeded", failed.Reason)
	assert.Equal(t, "Job has reached the specified backoff limit", failed.Message)
	assert.NotNil(t, condition(j, batchv1.JobFailureTarget))
	assert.Nil(t, condition(j, batchv1.JobComplete))
	assert.Nil(t, j.Status.CompletionTime)
	pods := jobPods(t, c, j)
	assert.Len(t, pods, 3)
	for _, p := range pods {
		assert.Equal(t, corev1.PodFailed, p.Status.Phase)
		assert.Empty(t, p.Finalizers)
	}
}

// TestOnFailureRestarts: with restartPolicy OnFailure, container restarts
// in the running pod are the failures.
func TestOnFailureRestarts(t *testing.T) {
	c := newCluster(t)
	startKubelet(t, c, time.Now, always(outcome{restarts: 2}))
	runJobs(t, c, nil)
	newJob(t, c, "crashloop", backoffLimit(2), restartPolicy(corev1.RestartPolicyOnFailure))
	j := waitCondition(t, c, "crashloop", batchv1.JobFailed)
	assert.Equal(t, "BackoffLimitExceeded", condition(j, batchv1.JobFailed).Reason)
	assert.EqualValues(t, 1, j.Status.Failed, "the running pod is deleted and counted failed")
	eventually(t, "pod gone", func(ctx context.Context) (bool, error) { return len(jobPods(t, c, j)) == 0, nil })
}

// TestDeletedPodIsReplaced: a pod deleted before it finished counts as a
// failure and is replaced.
func TestDeletedPodIsReplaced(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	startKubelet(t, c, time.Now, always(outcome{}))
	runJobs(t, c, nil)
	j := newJob(t, c, "victim")
	var first corev1.Pod
	eventually(t, "a running pod", func(ctx context.Context) (bool, error) {
		pods := jobPods(t, c, j)
		if len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning {
			first = pods[0]
			return true, nil
		}
		return false, nil
	})
	require.NoError(t, c.client.CoreV1().Pods("default").Delete(ctx, first.Name, metav1.DeleteOptions{}))
	eventually(t, "replacement and failure counted", func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, "victim", metav1.GetOptions{})
		if err != nil || j.Status.Failed != 1 {
			return false, err
		}
		for _, p := range jobPods(t, c, j) {
			if p.UID != first.UID && p.DeletionTimestamp == nil {
				return true, nil
			}
		}
		return false, nil
	})
	_, err := c.client.CoreV1().Pods("default").Get(ctx, first.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the deleted pod's finalizer was removed: %v", err)
}

// TestNoCompletions: without completions, the first success lets the
// others finish and completes the job.
func TestNoCompletions(t *testing.T) {
	c := newCluster(t)
	startKubelet(t, c, time.Now, always(outcome{phase: corev1.PodSucceeded}))
	runJobs(t, c, nil)
	newJob(t, c, "workqueue", parallelism(3), func(j *batchv1.Job) { j.Spec.Completions = nil })
	j := waitCondition(t, c, "workqueue", batchv1.JobComplete)
	assert.GreaterOrEqual(t, j.Status.Succeeded, int32(1))
	assert.EqualValues(t, 0, j.Status.Active)
}
