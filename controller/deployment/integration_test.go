package deployment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/controller/deployment"
)

func TestCreateDeployment(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	d, err := e.Client.AppsV1().Deployments("default").Create(ctx, newDeployment("web", 3, "img:1"), metav1.CreateOptions{})
	require.NoError(t, err)
	d = waitComplete(t, e.Client, "web")

	rss := ownedReplicaSets(t, e.Client, d)
	require.Len(t, rss, 1)
	rs := rss[0]
	hash := rs.Labels[deployment.HashLabel]
	require.NotEmpty(t, hash)
	assert.Equal(t, "web-"+hash, rs.Name)
	assert.Equal(t, hash, rs.Spec.Selector.MatchLabels[deployment.HashLabel])
	assert.Equal(t, hash, rs.Spec.Template.Labels[deployment.HashLabel])
	assert.Equal(t, "1", rs.Annotations[deployment.RevisionAnnotation])
	assert.Equal(t, "3", rs.Annotations[deployment.DesiredReplicasAnnotation])
	assert.Equal(t, "4", rs.Annotations[deployment.MaxReplicasAnnotation], "3 + 25%% surge rounded up")
	assert.Equal(t, "1", d.Annotations[deployment.RevisionAnnotation])

	pods := livePods(t, e.Client, "web")
	require.Len(t, pods, 3)
	for _, p := range pods {
		assert.True(t, strings.HasPrefix(p.Name, rs.Name+"-"), p.Name)
		assert.Equal(t, hash, p.Labels[deployment.HashLabel])
	}

	assert.EqualValues(t, 0, d.Status.UnavailableReplicas)
	avail := condition(d, appsv1.DeploymentAvailable)
	require.NotNil(t, avail)
	assert.Equal(t, corev1.ConditionTrue, avail.Status)
	assert.Equal(t, deployment.ReasonMinimumReplicasAvailable, avail.Reason)
	waitFor(t, "Progressing NewReplicaSetAvailable", func(ctx context.Context) (bool, error) {
		d, err := e.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := condition(d, appsv1.DeploymentProgressing)
		return c != nil && c.Reason == deployment.ReasonNewReplicaSetAvailable && c.Status == corev1.ConditionTrue &&
			c.Message == `ReplicaSet "`+rs.Name+`" has successfully progressed.`, nil
	})
	waitFor(t, "the ScalingReplicaSet event", func(ctx context.Context) (bool, error) {
		evs, err := e.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == deployment.EventScalingReplicaSet && ev.InvolvedObject.Name == "web" &&
				ev.Message == "Scaled up replica set "+rs.Name+" from 0 to 3" {
				return true, nil
			}
		}
		return false, nil
	})
}
