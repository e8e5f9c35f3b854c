package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/gc"
	"github.com/podkit/podkit/controller/gc/metaclient"
	"github.com/podkit/podkit/controller/job"
)

// TestDeletedJobsPodsGo: deleting a running Job in the background lets the
// garbage collector delete its pods, whose tracking finalizers the job
// controller then removes (their job is gone), so they really go.
func TestDeletedJobsPodsGo(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	md, _, err := metaclient.ForConfig(ctx, c.config)
	require.NoError(t, err)
	startKubelet(t, c, time.Now, always(outcome{}))
	c.run(t, map[string]controller.NewFunc{
		job.Name: func(ctx *controller.Context) (controller.Controller, error) { return job.New(ctx) },
		gc.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return gc.New(ctx, gc.Config{Metadata: md})
		},
	})
	j := newJob(t, c, "busy", parallelism(3), completions(3))
	eventually(t, "3 running pods", func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, "busy", metav1.GetOptions{})
		return err == nil && j.Status.Ready != nil && *j.Status.Ready == 3, err
	})
	bg := metav1.DeletePropagationBackground
	require.NoError(t, c.client.BatchV1().Jobs("default").Delete(ctx, "busy", metav1.DeleteOptions{PropagationPolicy: &bg}))
	eventually(t, "pods gone", func(ctx context.Context) (bool, error) {
		return len(jobPods(t, c, j)) == 0, nil
	})
}
