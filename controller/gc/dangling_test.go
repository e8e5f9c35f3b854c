package gc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func createPod(t *testing.T, c *cluster, ns, name string, owners ...metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	p, err := c.client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec:       podSpec(""),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return p
}

func podGone(c *cluster, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		return gone(c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}))
	}
}

func rsRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid}
}

// TestDanglingReferences: an owner that never existed, one whose name now
// belongs to another object (UID mismatch), and one in another namespace
// are all absent: their dependents are collected. A dependent with one
// live owner stays and loses the dangling reference.
func TestDanglingReferences(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	live := newTree(t, c, "default", "live", 0, 0)
	elsewhere := newTree(t, c, "other", "elsewhere", 0, 0)

	createPod(t, c, "default", "never-existed", rsRef("ghost", "5b1b8d8e-0000-4000-8000-000000000001"))
	createPod(t, c, "default", "uid-mismatch", rsRef(live.rs.Name, "5b1b8d8e-0000-4000-8000-000000000002"))
	createPod(t, c, "default", "cross-namespace", rsRef(elsewhere.rs.Name, elsewhere.rs.UID))
	createPod(t, c, "default", "half-dangling", rsRef(live.rs.Name, live.rs.UID), rsRef("ghost", "5b1b8d8e-0000-4000-8000-000000000001"))
	runGC(t, c)

	for _, name := range []string{"never-existed", "uid-mismatch", "cross-namespace"} {
		eventually(t, name+" collected", podGone(c, "default", name))
	}
	eventually(t, "dangling reference removed", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "half-dangling", metav1.GetOptions{})
		return err == nil && len(p.OwnerReferences) == 1, err
	})
	p, err := c.client.CoreV1().Pods("default").Get(ctx, "half-dangling", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, live.rs.UID, p.OwnerReferences[0].UID)
	_, err = c.client.AppsV1().ReplicaSets("other").Get(ctx, elsewhere.rs.Name, metav1.GetOptions{})
	assert.NoError(t, err, "the owner in the other namespace is not affected")
}

// TestClusterScopedOwner: a namespaced pod may be owned by a cluster-scoped
// Node; it stays while the node exists and is collected once it is gone.
func TestClusterScopedOwner(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	node, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	createPod(t, c, "default", "mirror", owner)
	createPod(t, c, "kube-system", "mirror", owner)
	// Proof the collector has processed its graph: a dangling pod goes.
	createPod(t, c, "default", "marker", rsRef("ghost", "5b1b8d8e-0000-4000-8000-000000000003"))
	runGC(t, c)
	eventually(t, "marker collected", podGone(c, "default", "marker"))
	_, err = c.client.CoreV1().Pods("default").Get(ctx, "mirror", metav1.GetOptions{})
	require.NoError(t, err, "a pod owned by an existing node stays")

	require.NoError(t, c.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}))
	eventually(t, "pod of the deleted node collected", podGone(c, "default", "mirror"))
	eventually(t, "pod in another namespace collected", podGone(c, "kube-system", "mirror"))
}

// TestClusterScopedDependentOfNamespacedOwner: such a reference can never
// resolve; the object is left alone and a warning event reported.
func TestClusterScopedDependentOfNamespacedOwner(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	cr, err := c.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "confused", OwnerReferences: []metav1.OwnerReference{rsRef("ghost", "5b1b8d8e-0000-4000-8000-000000000004")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	runGC(t, c)
	eventually(t, "OwnerRefInvalidNamespace event", func(ctx context.Context) (bool, error) {
		evs, err := c.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("reason", "OwnerRefInvalidNamespace").String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == cr.UID && e.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})
	_, err = c.client.RbacV1().ClusterRoles().Get(ctx, "confused", metav1.GetOptions{})
	assert.NoError(t, err, "an unresolvable owner reference does not get the object deleted")
}

// TestDependentWithFinalizers: a dependent collected in the background
// that has its own orphan finalizer is deleted with the orphan policy, so
// its dependents are kept.
func TestDependentWithOwnPolicy(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	tr := newTree(t, c, "default", "nested", 2, 0)
	// The ReplicaSet asks for its own dependents to be orphaned.
	rs := tr.rs.DeepCopy()
	rs.Finalizers = []string{metav1.FinalizerOrphanDependents}
	_, err := c.client.AppsV1().ReplicaSets("default").Update(ctx, rs, metav1.UpdateOptions{})
	require.NoError(t, err)
	runGC(t, c)

	require.NoError(t, c.client.AppsV1().Deployments("default").Delete(ctx, tr.deploy.Name, metav1.DeleteOptions{}))
	eventually(t, "replicaset gone", tr.rsGone(c))
	for _, p := range tr.pods {
		pod, err := c.client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		require.NoError(t, err, "pods of an orphaning ReplicaSet stay")
		assert.Empty(t, pod.OwnerReferences)
	}
	_ = ptr.To(0)
}
