package deployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/controller/deployment"
	"github.com/podkit/podkit/controller/replicaset"
)

const waitTimeout = 60 * time.Second

// env is an API server with both controllers and a fake kubelet.
type env struct {
	*controllertest.Cluster
	kubelet *controllertest.FakeKubelet
}

func newEnv(t testing.TB) *env {
	t.Helper()
	c := controllertest.NewCluster(t)
	k := controllertest.StartFakeKubelet(t, c.Client, controllertest.KubeletConfig{Nodes: []string{"n1", "n2", "n3"}, Schedule: true})
	c.StartManager(t, controller.ManagerConfig{},
		controllertest.Registration{Name: deployment.Name, New: deployment.NewFunc()},
		controllertest.Registration{Name: replicaset.Name, New: replicaset.NewFunc()},
	)
	return &env{Cluster: c, kubelet: k}
}

func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

func rolling(d *appsv1.Deployment, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
	return d
}

func waitFor(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, cond), "waiting for %s", what)
}

// waitComplete waits until the Deployment reports a finished rollout of
// its current generation, as kubectl rollout status decides it.
func waitComplete(t testing.TB, c kubernetes.Interface, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, fmt.Sprintf("deployment %s to complete", name), func(ctx context.Context) (bool, error) {
		var err error
		d, err = c.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n := *d.Spec.Replicas
		st := d.Status
		return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == n && st.Replicas == n &&
			st.AvailableReplicas == n && st.ReadyReplicas == n, nil
	})
	return d
}

// ownedReplicaSets returns the ReplicaSets controlled by the Deployment.
func ownedReplicaSets(t testing.TB, c kubernetes.Interface, d *appsv1.Deployment) []appsv1.ReplicaSet {
	t.Helper()
	list, err := c.AppsV1().ReplicaSets(d.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			out = append(out, rs)
		}
	}
	return out
}

// livePods returns the pods with the label app=name that are not being deleted.
func livePods(t testing.TB, c kubernetes.Interface, name string) []corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	return deployment.GetCondition(d.Status, t)
}
