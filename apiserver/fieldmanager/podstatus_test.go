package fieldmanager

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/internal/semantic/semantictest"
)

// The pod of a Deployment through the writes of its life, as the
// components send them: the ReplicaSet controller creates it, the
// scheduler binds it (the binding subresource changes the stored pod
// without tracking, as in kube-apiserver), then the kubelet writes whole
// statuses through pods/NAME/status.

// boundPod returns the stored pod after its create by
// kube-controller-manager and its binding to worker-1.
func boundPod(t testing.TB, m *Manager) *corev1.Pod {
	t.Helper()
	pod := semantictest.WorkloadPod()
	pod.ManagedFields = nil
	pod.ResourceVersion = ""
	pod.Status = corev1.PodStatus{}
	out, err := m.Update(context.Background(), nil, pod, podGVK, UpdateOptions{FieldManager: "kube-controller-manager"})
	require.NoError(t, err)
	live := persisted(t, out, "41").(*corev1.Pod)
	live.Spec.NodeName = "worker-1"
	live.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))}}
	live.ResourceVersion = "42"
	return live
}

// kubeletStatus returns pod with the status the kubelet writes once its
// containers run: phase, every condition it owns, host and pod IPs, start
// time, QoS class and a status per container; ready says whether the
// containers passed their readiness probes.
func kubeletStatus(pod *corev1.Pod, ready bool) *corev1.Pod {
	obj := pod.DeepCopy()
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC))
	running := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC))
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: s, LastTransitionTime: running}
		if s == corev1.ConditionFalse {
			c.Reason = reason
			c.Message = "containers with unready status: [web sidecar]"
		}
		return c
	}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: start}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = c
		}
	}
	obj.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: running},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: start},
			cond(corev1.PodReady, readyStatus, "ContainersNotReady"),
			cond(corev1.ContainersReady, readyStatus, "ContainersNotReady"),
			scheduled,
		},
		HostIP:    "10.0.0.11",
		HostIPs:   []corev1.HostIP{{IP: "10.0.0.11"}},
		PodIP:     "10.244.1.17",
		PodIPs:    []corev1.PodIP{{IP: "10.244.1.17"}},
		StartTime: &start,
		QOSClass:  corev1.PodQOSGuaranteed,
	}
	for _, c := range pod.Spec.Containers {
		started := true
		obj.Status.ContainerStatuses = append(obj.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: running}},
			Ready:        ready,
			RestartCount: 0,
			Image:        c.Image,
			ImageID:      c.Image + "@sha256:4a1c4b21597c1b4415bdbecb28a3296c6b5e23ca4f9feeb599860a1dac6a0108",
			ContainerID:  "podkit://" + c.Name + "-0b7c6f0e",
			Started:      &started,
		})
	}
	return obj
}
