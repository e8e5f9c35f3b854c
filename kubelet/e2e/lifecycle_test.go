package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/kubelet/status"
)

// simplePod runs one container with args.
func (n *node) simplePod(name string, args ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: n.image, Args: args}}}}
}

func (n *node) create(p *corev1.Pod) {
	n.t.Helper()
	_, err := n.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(n.t, err)
}

func running(p *corev1.Pod) bool {
	return p != nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 &&
		p.Status.ContainerStatuses[0].State.Running != nil
}

// waitLog waits until the log of p's first container holds want.
func (n *node) waitLog(p *corev1.Pod, want string) {
	n.t.Helper()
	id := status.ParseContainerID(p.Status.ContainerStatuses[0].ContainerID)
	require.Eventually(n.t, func() bool {
		cs, err := n.runtime.ContainerStatus(context.Background(), id)
		if err != nil || cs.LogPath == "" {
			return false
		}
		b, err := os.ReadFile(cs.LogPath)
		return err == nil && strings.Contains(string(b), want)
	}, time.Minute, 10*time.Millisecond, "container %s of pod %s never logged %q", id, p.Name, want)
}

// deleteAndWait deletes a pod and returns its last state (its final status).
func (n *node) deleteAndWait(name string) *corev1.Pod {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := n.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(n.t, err)
	defer w.Stop()
	require.NoError(n.t, n.client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}))
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			return ev.Object.(*corev1.Pod)
		}
	}
	n.t.Fatalf("pod %s was not deleted", name)
	return nil
}

func TestTerminationSignals(t *testing.T) {
	n := newNode(t)
	polite := n.simplePod("polite", "term-exit", "7")
	stubborn := n.simplePod("stubborn", "ignore-term")
	stubborn.Spec.TerminationGracePeriodSeconds = ptr(int64(2))
	n.create(polite)
	n.create(stubborn)
	// Running means the process started, not that its handler is in
	// place: a SIGTERM before that kills PID 1 the default way.
	n.waitLog(n.waitPod("polite", "Running", running), "waiting for SIGTERM")
	n.waitLog(n.waitPod("stubborn", "Running", running), "ignoring SIGTERM")

	final := n.deleteAndWait("polite")
	term := final.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term, "final status")
	assert.Equal(t, int32(7), term.ExitCode, "SIGTERM reached the container, which exited by itself")

	start := time.Now()
	final = n.deleteAndWait("stubborn")
	term = final.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, int32(137), term.ExitCode, "SIGKILL after the grace period")
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "the grace period was honoured")
}

func TestKubeletRestartLeavesContainersRunning(t *testing.T) {
	n := newNode(t)
	n.create(n.simplePod("web", "sleep", "inf"))
	before := n.waitPod("web", "Running", running)
	id := status.ParseContainerID(before.Status.ContainerStatuses[0].ContainerID)
	st, err := n.runtime.ContainerStatus(context.Background(), id)
	require.NoError(t, err)

	n.restartKubelet()
	// Readiness resets with the prober: wait for the new kubelet's report.
	after := n.waitPod("web", "Ready again", ready)
	cs := after.Status.ContainerStatuses[0]
	assert.Equal(t, before.Status.ContainerStatuses[0].ContainerID, cs.ContainerID)
	assert.Zero(t, cs.RestartCount)
	again, err := n.runtime.ContainerStatus(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, st.PID, again.PID, "the same process")
	assert.Equal(t, before.Status.PodIP, after.Status.PodIP)
}

func TestOOMKilledOnTheRealKernel(t *testing.T) {
	n := newNode(t)
	p := n.simplePod("hog", "alloc", "128")
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
	n.create(p)
	got := n.waitPod("hog", "Failed", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodFailed })
	term := got.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, "OOMKilled", term.Reason)
	assert.Equal(t, int32(137), term.ExitCode)
}
