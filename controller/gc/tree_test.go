package gc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/gc"
)

func runGC(t *testing.T, c *cluster, opts ...gc.Option) {
	t.Helper()
	c.run(t, map[string]controller.NewFunc{
		gc.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return gc.New(ctx, gc.Config{Metadata: c.metadata}, opts...)
		},
	})
}

// tree is a Deployment owning a ReplicaSet owning pods, built by hand the
// way the deployment and replicaset controllers would (controller
// references with blockOwnerDeletion).
type tree struct {
	ns     string
	deploy *appsv1.Deployment
	rs     *appsv1.ReplicaSet
	pods   []*corev1.Pod
}

func controllerRef(obj metav1.Object, apiVersion, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// newTree creates the tree in namespace ns; boundPods of the pods are on a
// node, so their deletion waits for that node's kubelet.
func newTree(t *testing.T, c *cluster, ns, name string, pods, boundPods int) *tree {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	tr := &tree{ns: ns}
	var err error
	tr.deploy, err = c.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr.rs, err = c.client.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-abc", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef(tr.deploy, "apps/v1", "Deployment")}},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range pods {
		node := ""
		if i < boundPods {
			node = "node-1"
		}
		p, err := c.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-abc-%d", name, i), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{controllerRef(tr.rs, "apps/v1", "ReplicaSet")}},
			Spec: podSpec(node),
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr.pods = append(tr.pods, p)
	}
	return tr
}

func podSpec(node string) corev1.PodSpec {
	return corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
}

func (tr *tree) deployGone(c *cluster) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		return gone(c.client.AppsV1().Deployments(tr.ns).Get(ctx, tr.deploy.Name, metav1.GetOptions{}))
	}
}

func (tr *tree) rsGone(c *cluster) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		return gone(c.client.AppsV1().ReplicaSets(tr.ns).Get(ctx, tr.rs.Name, metav1.GetOptions{}))
	}
}

func (tr *tree) podsGone(c *cluster) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		for _, p := range tr.pods {
			ok, err := gone(c.client.CoreV1().Pods(tr.ns).Get(ctx, p.Name, metav1.GetOptions{}))
			if !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

// gone turns a Get's result into "the object no longer exists".
func gone[T any](_ T, err error) (bool, error) {
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// confirmPodDeletions plays the kubelet of node-1: it removes the pods
// that are marked for deletion.
func confirmPodDeletions(t *testing.T, c *cluster, ns string) int {
	t.Helper()
	ctx := context.Background()
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			err := c.client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if !apierrors.IsNotFound(err) {
				require.NoError(t, err)
			}
			n++
		}
	}
	return n
}
