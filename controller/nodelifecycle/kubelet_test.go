package nodelifecycle_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// fakeKubelet plays the kubelets of the test's nodes: it registers nodes,
// posts their status and renews their leases, stamped by the fake clock.
type fakeKubelet struct {
	t     *testing.T
	c     *cluster
	clock clock.PassiveClock
}

func (k *fakeKubelet) register(name string, ready corev1.ConditionStatus) {
	k.t.Helper()
	ctx := context.Background()
	_, err := k.c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(k.t, err)
	k.postStatus(name, ready, corev1.ConditionFalse)
	_, err = k.c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: ptr.To(metav1.NewMicroTime(k.clock.Now()))},
	}, metav1.CreateOptions{})
	require.NoError(k.t, err)
}

// postStatus posts Ready and MemoryPressure with a fresh heartbeat.
func (k *fakeKubelet) postStatus(name string, ready, memoryPressure corev1.ConditionStatus) {
	k.t.Helper()
	ctx := context.Background()
	n, err := k.c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(k.t, err)
	now := metav1.NewTime(k.clock.Now())
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeMemoryPressure, Status: memoryPressure, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	_, err = k.c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(k.t, err)
}

func (k *fakeKubelet) renew(name string) {
	k.t.Helper()
	ctx := context.Background()
	l, err := k.c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	require.NoError(k.t, err)
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(k.clock.Now()))
	_, err = k.c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(k.t, err)
}

// runPod creates a pod bound to node and reports it Running and Ready.
func (k *fakeKubelet) runPod(name, node string, tolerations ...corev1.Toleration) *corev1.Pod {
	k.t.Helper()
	ctx := context.Background()
	p, err := k.c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: tolerations,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(k.t, err)
	now := metav1.NewTime(k.clock.Now())
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	p, err = k.c.client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(k.t, err)
	return p
}
