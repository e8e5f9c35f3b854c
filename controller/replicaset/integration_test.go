package replicaset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/controller/replicaset"
)

const waitTimeout = 30 * time.Second

func newRS(name string, n int32) *appsv1.ReplicaSet {
	lbl := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
		},
	}
}

func start(t *testing.T, kubelet bool, opts ...replicaset.Option) *controllertest.Cluster {
	t.Helper()
	c := controllertest.NewCluster(t)
	if kubelet {
		controllertest.StartFakeKubelet(t, c.Client, controllertest.KubeletConfig{Nodes: []string{"n1", "n2"}, Schedule: true})
	}
	c.StartManager(t, controller.ManagerConfig{}, controllertest.Registration{Name: replicaset.Name, New: replicaset.NewFunc(opts...)})
	return c
}

func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, cond)
	require.NoError(t, err, "waiting for %s", what)
}

func ownedPods(ctx context.Context, c kubernetes.Interface, rs *appsv1.ReplicaSet) ([]corev1.Pod, error) {
	list, err := c.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func waitAvailable(t *testing.T, c kubernetes.Interface, name string, n int32) *appsv1.ReplicaSet {
	t.Helper()
	var rs *appsv1.ReplicaSet
	waitFor(t, fmt.Sprintf("%s to have %d available replicas", name, n), func(ctx context.Context) (bool, error) {
		var err error
		rs, err = c.AppsV1().ReplicaSets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return rs.Status.ObservedGeneration == rs.Generation && rs.Status.Replicas == n &&
			rs.Status.AvailableReplicas == n && rs.Status.ReadyReplicas == n, nil
	})
	return rs
}

func TestCreateScaleAndReplace(t *testing.T) {
	c := start(t, true)
	ctx := t.Context()
	rs, err := c.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 3), metav1.CreateOptions{})
	require.NoError(t, err)
	rs = waitAvailable(t, c.Client, "web", 3)
	assert.EqualValues(t, 3, rs.Status.FullyLabeledReplicas)

	pods, err := ownedPods(ctx, c.Client, rs)
	require.NoError(t, err)
	require.Len(t, pods, 3)
	for _, p := range pods {
		assert.Regexp(t, `^web-[a-z0-9]{5}$`, p.Name)
		ref := metav1.GetControllerOf(&p)
		require.NotNil(t, ref)
		assert.Equal(t, "ReplicaSet", ref.Kind)
		assert.Equal(t, "apps/v1", ref.APIVersion)
		assert.Equal(t, "web", ref.Name)
		assert.True(t, *ref.BlockOwnerDeletion)
	}

	rs.Spec.Replicas = ptr.To[int32](5)
	_, err = c.Client.AppsV1().ReplicaSets("default").Update(ctx, rs, metav1.UpdateOptions{})
	require.NoError(t, err)
	rs = waitAvailable(t, c.Client, "web", 5)

	rs.Spec.Replicas = ptr.To[int32](2)
	_, err = c.Client.AppsV1().ReplicaSets("default").Update(ctx, rs, metav1.UpdateOptions{})
	require.NoError(t, err)
	rs = waitAvailable(t, c.Client, "web", 2)

	// A deleted pod is replaced.
	pods, err = ownedPods(ctx, c.Client, rs)
	require.NoError(t, err)
	require.Len(t, pods, 2)
	victim := pods[0]
	require.NoError(t, c.Client.CoreV1().Pods("default").Delete(ctx, victim.Name, metav1.DeleteOptions{}))
	waitFor(t, "the deleted pod to be replaced", func(ctx context.Context) (bool, error) {
		pods, err := ownedPods(ctx, c.Client, rs)
		if err != nil || len(pods) != 2 {
			return false, err
		}
		for _, p := range pods {
			if p.Name == victim.Name {
				return false, nil
			}
		}
		return true, nil
	})
	waitAvailable(t, c.Client, "web", 2)

	// Events with Kubernetes' messages.
	waitFor(t, "SuccessfulCreate and SuccessfulDelete events", func(ctx context.Context) (bool, error) {
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var created, deleted bool
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind != "ReplicaSet" || e.InvolvedObject.Name != "web" || e.Source.Component != replicaset.Component {
				continue
			}
			created = created || (e.Reason == "SuccessfulCreate" && len(e.Message) > len("Created pod: web-") && e.Message[:len("Created pod: web-")] == "Created pod: web-")
			deleted = deleted || (e.Reason == "SuccessfulDelete" && len(e.Message) > len("Deleted pod: web-") && e.Message[:len("Deleted pod: web-")] == "Deleted pod: web-")
		}
		return created && deleted, nil
	})
}
