package e2e

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/internal/testutil"
)

// TestSchedulerProcessBindsPods runs `podkit scheduler` as its own process
// against `podkit apiserver`: a pod applied with kubectl lands on the only
// node that fits, and a pod that fits nowhere is reported Unschedulable.
func TestSchedulerProcessBindsPods(t *testing.T) {
	t.Parallel()
	srv := startAPIServer(t, withMemoryStore())
	cmd := exec.Command(podkitBinary, "scheduler", "--kubeconfig", srv.Kubeconfig)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, cpu := range map[string]string{"small": "1", "big": "8"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}}
		_, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	k := newKubectl(t, testutil.Kubectl(t, 32), 32, srv)
	k.OK("run", "needs-4-cpus", "--image=img:1", "--overrides", `{"spec":{"containers":[{"name":"needs-4-cpus","image":"img:1","resources":{"requests":{"cpu":"4"}}}]}}`)
	k.OK("run", "needs-64-cpus", "--image=img:1", "--overrides", `{"spec":{"containers":[{"name":"needs-64-cpus","image":"img:1","resources":{"requests":{"cpu":"64"}}}]}}`)

	require.Eventually(t, func() bool {
		p, err := c.CoreV1().Pods("default").Get(ctx, "needs-4-cpus", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != ""
	}, 20*time.Second, 50*time.Millisecond)
	p, err := c.CoreV1().Pods("default").Get(ctx, "needs-4-cpus", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "big", p.Spec.NodeName)

	require.Eventually(t, func() bool {
		p, err := c.CoreV1().Pods("default").Get(ctx, "needs-64-cpus", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	out := k.OK("describe", "pod", "needs-64-cpus")
	assert.Contains(t, out, "0/2 nodes are available: 2 Insufficient cpu.")
}
