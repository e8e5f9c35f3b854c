package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/job"
)

// TestTTLAfterFinished: a finished job is deleted ttlSecondsAfterFinished
// after it finished (foreground: the orphan finalizer never shows up, the
// foregroundDeletion one does until its pods are gone — no garbage
// collector runs here, so the job stays marked).
func TestTTLAfterFinished(t *testing.T) {
	c := newCluster(t)
	clk := testingclock.NewFakeClock(time.Now())
	startKubelet(t, c, clk.Now, always(outcome{phase: corev1.PodSucceeded}))
	c.run(t, map[string]controller.NewFunc{
		job.Name: func(ctx *controller.Context) (controller.Controller, error) { return job.New(ctx) },
		job.TTLName: func(ctx *controller.Context) (controller.Controller, error) {
			return job.NewTTLController(ctx, 10*time.Millisecond)
		},
	}, func(cfg *controller.ManagerConfig) { cfg.Clock = clk })
	newJob(t, c, "short-lived", func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](100) })
	newJob(t, c, "kept")
	waitCondition(t, c, "short-lived", batchv1.JobComplete)
	waitCondition(t, c, "kept", batchv1.JobComplete)
	j := getJob(t, c, "short-lived")
	assert.Nil(t, j.DeletionTimestamp, "100 s have not passed")

	clk.Step(101 * time.Second)
	eventually(t, "job deleted after its TTL", func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, "short-lived", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && j.DeletionTimestamp != nil, err
	})
	k, err := c.client.BatchV1().Jobs("default").Get(context.Background(), "kept", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, k.DeletionTimestamp, "a job without TTL stays")
}
