package gc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubectlCascade: real kubectl deletes Deployments with each
// --cascade mode and waits (its default) until the Deployment is gone.
// With foreground the dependents are already gone when kubectl returns;
// with background they go afterwards; with orphan they stay.
func TestKubectlCascade(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	fg := newTree(t, c, "default", "fg", 2, 0)
	bg := newTree(t, c, "default", "bg", 2, 0)
	orph := newTree(t, c, "default", "orph", 2, 0)
	runGC(t, c)

	code, out, errOut := c.kubectl(t, "delete", "deploy", "fg", "--cascade=foreground", "--timeout=30s")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, "deployment.apps \"fg\" deleted\n", out)
	for _, cond := range []func(context.Context) (bool, error){fg.deployGone(c), fg.rsGone(c), fg.podsGone(c)} {
		ok, err := cond(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "a foreground deletion ends after the dependents are gone")
	}

	code, out, errOut = c.kubectl(t, "delete", "deploy", "bg", "--cascade=background", "--timeout=30s")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, "deployment.apps \"bg\" deleted\n", out)
	eventually(t, "background replicaset collected", bg.rsGone(c))
	eventually(t, "background pods collected", bg.podsGone(c))

	code, out, errOut = c.kubectl(t, "delete", "deploy", "orph", "--cascade=orphan", "--timeout=30s")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, "deployment.apps \"orph\" deleted\n", out)
	ok, err := orph.deployGone(c)(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "kubectl waited for the orphaning deployment to go")
	rs, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, orph.rs.Name, metav1.GetOptions{})
	require.NoError(t, err, "orphaned replicaset stays")
	assert.Empty(t, rs.OwnerReferences)
	pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=orph"})
	require.NoError(t, err)
	assert.Len(t, pods.Items, 2, "orphaned pods stay")
}
