package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllers"
	"github.com/podkit/podkit/controller/controllertest"
)

// The default set works together: a Deployment becomes pods (deployment →
// replicaset), nodes get PodCIDRs (IPAM), a deleted namespace is emptied
// and removed (namespace controller + garbage collector).
func TestDefaultControllers(t *testing.T) {
	cl := controllertest.NewCluster(t)
	ctx, cancel := context.WithCancel(t.Context())
	m, err := controllers.New(ctx, cl.Config, controller.ManagerConfig{Client: cl.Client}, controllers.Options{})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	controllertest.StartFakeKubelet(t, cl.Client, controllertest.KubeletConfig{Nodes: []string{"n1"}, Schedule: true})

	_, err = cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	_, err = cl.Client.AppsV1().Deployments("team").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := cl.Client.AppsV1().Deployments("team").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2
	}, 60*time.Second, 50*time.Millisecond, "deployment available")
	require.Eventually(t, func() bool {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && n.Spec.PodCIDR != ""
	}, 60*time.Second, 50*time.Millisecond, "node IPAM")

	require.NoError(t, cl.Client.CoreV1().Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := cl.Client.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 100*time.Millisecond, "namespace removed")
	pods, err := cl.Client.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, pods.Items)
}

func TestUnknownControllerToDisable(t *testing.T) {
	cl := controllertest.NewCluster(t)
	_, err := controllers.New(t.Context(), cl.Config, controller.ManagerConfig{Client: cl.Client}, controllers.Options{Disable: []string{"nope"}})
	assert.ErrorContains(t, err, `unknown controller "nope"`)
}
