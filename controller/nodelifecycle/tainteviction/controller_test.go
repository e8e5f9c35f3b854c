package tainteviction_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/nodelifecycle/tainteviction"
)

func createPod(t *testing.T, c *cluster, name, node string, tols ...corev1.Toleration) {
	t.Helper()
	_, err := c.client.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Tolerations: tols, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func evicted(c *cluster, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	}
}

// TestEvictsOnCustomTaint: a NoExecute taint added by someone else
// (without timeAdded) evicts pods that do not tolerate it at once, and
// those tolerating it for 20 s twenty seconds after the controller first
// saw it.
func TestEvictsOnCustomTaint(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now())
	_, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	maint := func(seconds int64) corev1.Toleration {
		return corev1.Toleration{Key: "example.com/maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(seconds)}
	}
	createPod(t, c, "intolerant", "n")
	createPod(t, c, "patient", "n", maint(20))
	createPod(t, c, "saved", "n", maint(60))
	createPod(t, c, "unbound", "")
	c.run(t, map[string]controller.NewFunc{
		tainteviction.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return tainteviction.New(ctx, tainteviction.WithRecheckInterval(10*time.Millisecond))
		},
	}, func(cfg *controller.ManagerConfig) { cfg.Clock = clk })

	n, err := c.client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Taints = []corev1.Taint{{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute}}
	_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "intolerant pod evicted at once", evicted(c, "intolerant"))
	p, err := c.client.CoreV1().Pods("default").Get(ctx, "intolerant", metav1.GetOptions{})
	require.NoError(t, err)
	var reason string
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget {
			reason = cond.Reason
		}
	}
	assert.Equal(t, "DeletionByTaintManager", reason)
	p, err = c.client.CoreV1().Pods("default").Get(ctx, "patient", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, p.DeletionTimestamp, "20 s have not passed")

	clk.Step(21 * time.Second)
	eventually(t, "patient pod evicted after 20 s", evicted(c, "patient"))
	p, err = c.client.CoreV1().Pods("default").Get(ctx, "saved", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, p.DeletionTimestamp, "60 s have not passed")
	p, err = c.client.CoreV1().Pods("default").Get(ctx, "unbound", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, p.DeletionTimestamp, "pods on no node are not affected")
}
