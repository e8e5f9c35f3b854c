package gc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/gc"
)

// TestBackground: deleting a Deployment (background, the default) lets the
// collector delete its ReplicaSet and then the ReplicaSet's pods; another
// tree is untouched. Both monitor flavours are exercised.
func TestBackground(t *testing.T) {
	for name, opts := range map[string][]gc.Option{
		"shared-informers":   nil,
		"metadata-informers": {gc.WithMetadataInformersOnly()},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t)
			ctx := context.Background()
			doomed := newTree(t, c, "default", "doomed", 3, 0)
			kept := newTree(t, c, "default", "kept", 2, 0)
			runGC(t, c, opts...)

			require.NoError(t, c.client.AppsV1().Deployments("default").Delete(ctx, "doomed", metav1.DeleteOptions{}))
			eventually(t, "replicaset collected", doomed.rsGone(c))
			eventually(t, "pods collected", doomed.podsGone(c))

			_, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, kept.rs.Name, metav1.GetOptions{})
			assert.NoError(t, err, "a ReplicaSet whose owner exists stays")
			for _, p := range kept.pods {
				_, err := c.client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
				assert.NoError(t, err, "a pod whose owner exists stays")
			}
		})
	}
}

// TestForeground: a Deployment deleted in the foreground stays (with
// deletionTimestamp and the foregroundDeletion finalizer) until its
// blocking dependents are gone: its ReplicaSet is deleted in the
// foreground too, and waits for the pod whose kubelet has not confirmed.
func TestForeground(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	tr := newTree(t, c, "default", "web", 3, 1)
	runGC(t, c)

	fg := metav1.DeletePropagationForeground
	require.NoError(t, c.client.AppsV1().Deployments("default").Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}))
	// The two unbound pods go at once; the bound one is only marked.
	eventually(t, "bound pod marked for deletion", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, tr.pods[0].Name, metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	eventually(t, "unbound pods deleted", func(ctx context.Context) (bool, error) {
		for _, p := range tr.pods[1:] {
			if ok, err := gone(c.client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err, "the deployment waits for its dependents")
	assert.NotNil(t, d.DeletionTimestamp)
	assert.Equal(t, []string{metav1.FinalizerDeleteDependents}, d.Finalizers)
	rs, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, tr.rs.Name, metav1.GetOptions{})
	require.NoError(t, err, "the replicaset waits for its bound pod")
	assert.NotNil(t, rs.DeletionTimestamp)
	assert.Equal(t, []string{metav1.FinalizerDeleteDependents}, rs.Finalizers, "dependents with dependents are deleted in the foreground")

	require.Equal(t, 1, confirmPodDeletions(t, c, "default"))
	eventually(t, "replicaset gone", tr.rsGone(c))
	eventually(t, "deployment gone", tr.deployGone(c))
}

// TestForegroundNonBlocking: dependents without blockOwnerDeletion are
// deleted but not waited for.
func TestForegroundNonBlocking(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	tr := newTree(t, c, "default", "loose", 1, 1)
	// The pod no longer blocks its ReplicaSet.
	p := tr.pods[0]
	p.OwnerReferences[0].BlockOwnerDeletion = ptr.To(false)
	_, err := c.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	runGC(t, c)

	fg := metav1.DeletePropagationForeground
	require.NoError(t, c.client.AppsV1().ReplicaSets("default").Delete(ctx, tr.rs.Name, metav1.DeleteOptions{PropagationPolicy: &fg}))
	eventually(t, "replicaset gone without waiting for its pod", tr.rsGone(c))
	eventually(t, "the pod deleted too (marked: its kubelet must confirm)", func(ctx context.Context) (bool, error) {
		pod, err := c.client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		return err == nil && pod.DeletionTimestamp != nil, err
	})
}

// TestOrphan: a Deployment deleted with the orphan policy goes, its
// ReplicaSet stays without the reference, and the pods keep theirs to the
// ReplicaSet.
func TestOrphan(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	tr := newTree(t, c, "default", "orphans", 2, 0)
	runGC(t, c)

	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, c.client.AppsV1().Deployments("default").Delete(ctx, "orphans", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	eventually(t, "deployment gone", tr.deployGone(c))
	rs, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, tr.rs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, rs.OwnerReferences, "the orphaned ReplicaSet no longer names its owner")
	assert.Nil(t, rs.DeletionTimestamp)
	for _, p := range tr.pods {
		pod, err := c.client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, rs.UID, pod.OwnerReferences[0].UID)
	}
	// The orphan is an ordinary object now: deleting it collects its pods.
	require.NoError(t, c.client.AppsV1().ReplicaSets("default").Delete(ctx, tr.rs.Name, metav1.DeleteOptions{}))
	eventually(t, "pods of the deleted orphan collected", tr.podsGone(c))
}

// TestOrphanFinalizerWhileStopped: owners deleted while the collector was
// not running (orphan finalizer set, background owner gone) are handled
// when it starts, from the informers' initial lists.
func TestRestartPicksUpPendingWork(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	bg := newTree(t, c, "default", "bg", 2, 0)
	orph := newTree(t, c, "default", "orph", 1, 0)
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, c.client.AppsV1().Deployments("default").Delete(ctx, "bg", metav1.DeleteOptions{}))
	require.NoError(t, c.client.AppsV1().Deployments("default").Delete(ctx, "orph", metav1.DeleteOptions{PropagationPolicy: &orphan}))

	runGC(t, c)
	eventually(t, "background dependents collected", bg.rsGone(c))
	eventually(t, "background pods collected", bg.podsGone(c))
	eventually(t, "orphaning owner gone", orph.deployGone(c))
	rs, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, orph.rs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, rs.OwnerReferences)
}

// TestMonitorsFollowDiscovery: every listable, watchable, deletable
// resource the server serves is monitored, except events.
func TestMonitorsFollowDiscovery(t *testing.T) {
	c := newCluster(t)
	created := make(chan *gc.GarbageCollector, 1)
	c.run(t, map[string]controller.NewFunc{
		gc.Name: func(ctx *controller.Context) (controller.Controller, error) {
			g, err := gc.New(ctx, gc.Config{Metadata: c.metadata})
			created <- g
			return g, err
		},
	})
	g := <-created
	eventually(t, "monitors started", func(context.Context) (bool, error) { return len(g.Resources()) > 0, nil })
	var names []string
	for _, r := range g.Resources() {
		names = append(names, r.GroupResource().String())
	}
	for _, want := range []string{"pods", "deployments.apps", "replicasets.apps", "jobs.batch", "nodes", "namespaces",
		"configmaps", "leases.coordination.k8s.io", "clusterroles.rbac.authorization.k8s.io"} {
		assert.Contains(t, names, want)
	}
	assert.NotContains(t, names, "events")
	assert.NotContains(t, names, "events.events.k8s.io")
	assert.NotContains(t, names, "bindings", "not listable")
}
