package nodelifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/nodelifecycle"
	"github.com/podkit/podkit/controller/nodelifecycle/tainteviction"
)

// env runs the node lifecycle and taint eviction controllers on a fake
// clock, with a fake kubelet.
type env struct {
	c       *cluster
	clock   *testingclock.FakeClock
	kubelet *fakeKubelet
	ctrl    *nodelifecycle.Controller
}

func newEnv(t *testing.T, opts ...nodelifecycle.Option) *env {
	t.Helper()
	e := &env{c: newCluster(t), clock: testingclock.NewFakeClock(time.Now().Truncate(time.Second))}
	e.kubelet = &fakeKubelet{t: t, c: e.c, clock: e.clock}
	created := make(chan *nodelifecycle.Controller, 1)
	opts = append([]nodelifecycle.Option{nodelifecycle.WithMonitorPeriod(10 * time.Millisecond)}, opts...)
	e.c.run(t, map[string]controller.NewFunc{
		nodelifecycle.Name: func(ctx *controller.Context) (controller.Controller, error) {
			ctrl, err := nodelifecycle.New(ctx, opts...)
			created <- ctrl
			return ctrl, err
		},
		tainteviction.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return tainteviction.New(ctx, tainteviction.WithRecheckInterval(10*time.Millisecond))
		},
	}, func(cfg *controller.ManagerConfig) { cfg.Clock = e.clock })
	e.ctrl = <-created
	return e
}

// waitProbe waits until the controller's last sign of life of node is at
// least since (by the fake clock).
func (e *env) waitProbe(t *testing.T, node string, since time.Time) {
	t.Helper()
	eventually(t, "controller observes "+node, func(context.Context) (bool, error) {
		at, ok := e.ctrl.LastProbe(node)
		return ok && !at.Before(since), nil
	})
}

func (e *env) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := e.c.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

func (e *env) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := e.c.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

func findTaint(n *corev1.Node, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].Key == key && n.Spec.Taints[i].Effect == effect {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func (e *env) waitNode(t *testing.T, name, what string, cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var n *corev1.Node
	eventually(t, fmt.Sprintf("node %s: %s", name, what), func(ctx context.Context) (bool, error) {
		var err error
		n, err = e.c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(n), err
	})
	return n
}

func (e *env) waitPod(t *testing.T, name, what string, cond func(*corev1.Pod) bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("pod %s: %s", name, what), func(ctx context.Context) (bool, error) {
		p, err := e.c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(p), err
	})
}

// TestLostNodeLifecycle: a node whose lease stops renewing becomes
// Unknown after the grace period, is tainted unreachable, its pods turn
// not ready and are evicted after their tolerationSeconds (the defaults
// from admission, 300 s, or shorter ones), a pod tolerating forever stays;
// a healthy node is untouched; when the kubelet reports again the taints
// go.
func TestLostNodeLifecycle(t *testing.T) {
	e := newEnv(t)
	k := e.kubelet
	t0 := e.clock.Now()
	k.register("lost", corev1.ConditionTrue)
	k.register("healthy", corev1.ConditionTrue)
	short := k.runPod("short", "lost", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)})
	k.runPod("defaults", "lost")
	k.runPod("forever", "lost", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	k.runPod("elsewhere", "healthy")
	require.Len(t, e.pod(t, "defaults").Spec.Tolerations, 2, "admission added the 300 s defaults")
	e.waitProbe(t, "lost", t0)
	e.waitProbe(t, "healthy", t0)

	// 30 s pass; only "healthy" renews its lease.
	e.clock.Step(30 * time.Second)
	k.renew("healthy")
	e.waitProbe(t, "healthy", e.clock.Now())
	e.clock.Step(11 * time.Second) // "lost" silent for 41 s > 40 s
	lostAt := e.clock.Now()

	n := e.waitNode(t, "lost", "Ready Unknown", func(n *corev1.Node) bool {
		c := nodeCondition(n, corev1.NodeReady)
		return c != nil && c.Status == corev1.ConditionUnknown
	})
	ready := nodeCondition(n, corev1.NodeReady)
	assert.Equal(t, "NodeStatusUnknown", ready.Reason)
	assert.Equal(t, "Kubelet stopped posting node status.", ready.Message)
	assert.True(t, ready.LastTransitionTime.Time.Equal(lostAt))
	mem := nodeCondition(n, corev1.NodeMemoryPressure)
	assert.Equal(t, [2]string{"Unknown", "NodeStatusUnknown"}, [2]string{string(mem.Status), mem.Reason})
	for _, typ := range []corev1.NodeConditionType{corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		c := nodeCondition(n, typ)
		if assert.NotNil(t, c, typ) {
			assert.Equal(t, [3]string{"Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status."}, [3]string{string(c.Status), c.Reason, c.Message})
		}
	}
	n = e.waitNode(t, "lost", "unreachable taints", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) != nil &&
			findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) != nil
	})
	taint := findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	require.NotNil(t, taint.TimeAdded)
	assert.True(t, taint.TimeAdded.Time.Equal(lostAt), "timeAdded %s, lost at %s", taint.TimeAdded, lostAt)
	for _, name := range []string{"short", "defaults", "forever"} {
		e.waitPod(t, name, "not ready", func(p *corev1.Pod) bool { return podReady(p) == corev1.ConditionFalse })
	}
	assert.Equal(t, corev1.ConditionTrue, podReady(e.pod(t, "elsewhere")), "pods of a healthy node stay ready")
	h := e.node(t, "healthy")
	assert.Empty(t, h.Spec.Taints)
	assert.Equal(t, corev1.ConditionTrue, nodeCondition(h, corev1.NodeReady).Status)

	// 30 s after the taint: "short" is evicted (deleted; the lost kubelet
	// cannot confirm, so it stays marked), "defaults" is not.
	e.clock.Step(30 * time.Second)
	e.waitPod(t, "short", "evicted", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil && p.UID == short.UID })
	assert.Contains(t, conditionTypes(e.pod(t, "short")), corev1.DisruptionTarget)
	assert.Nil(t, e.pod(t, "defaults").DeletionTimestamp, "300 s have not passed")

	e.clock.Step(270 * time.Second)
	e.waitPod(t, "defaults", "evicted after 300 s", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	assert.Nil(t, e.pod(t, "forever").DeletionTimestamp, "a toleration without seconds tolerates forever")
	assert.Nil(t, e.pod(t, "elsewhere").DeletionTimestamp)

	// The kubelet is back: it renews its lease and reports Ready.
	k.renew("lost")
	k.postStatus("lost", corev1.ConditionTrue, corev1.ConditionFalse)
	e.waitNode(t, "lost", "taints removed", func(n *corev1.Node) bool { return len(n.Spec.Taints) == 0 })
	e.clock.Step(10 * time.Second)
	k.renew("lost")
	assert.Equal(t, corev1.ConditionTrue, nodeCondition(e.node(t, "lost"), corev1.NodeReady).Status,
		"the controller does not overrule a reporting kubelet")
}

func conditionTypes(p *corev1.Pod) []corev1.PodConditionType {
	var out []corev1.PodConditionType
	for _, c := range p.Status.Conditions {
		out = append(out, c.Type)
	}
	return out
}

// TestNotReadyNode: a kubelet that reports Ready False is alive: the node
// gets the not-ready taints, its pods are left to their kubelet; when the
// kubelet then goes silent the NoExecute taint becomes unreachable.
func TestNotReadyNode(t *testing.T) {
	e := newEnv(t)
	k := e.kubelet
	k.register("sick", corev1.ConditionFalse)
	k.runPod("p", "sick")
	n := e.waitNode(t, "sick", "not-ready taints", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute) != nil &&
			findTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule) != nil
	})
	assert.Nil(t, findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute))
	e.waitProbe(t, "sick", e.clock.Now())
	assert.Equal(t, corev1.ConditionTrue, podReady(e.pod(t, "p")), "a reporting kubelet keeps its pods' readiness")

	e.clock.Step(41 * time.Second)
	n = e.waitNode(t, "sick", "unreachable NoExecute taint", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) != nil
	})
	assert.Nil(t, findTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), "swapped, not added")
	e.waitPod(t, "p", "not ready once the kubelet is lost", func(p *corev1.Pod) bool { return podReady(p) == corev1.ConditionFalse })
}

// TestConditionTaints: pressure conditions and cordoning give NoSchedule
// taints, removed when they clear.
func TestConditionTaints(t *testing.T) {
	e := newEnv(t)
	k := e.kubelet
	ctx := context.Background()
	k.register("busy", corev1.ConditionTrue)
	k.postStatus("busy", corev1.ConditionTrue, corev1.ConditionTrue)
	n := e.waitNode(t, "busy", "memory-pressure taint", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule) != nil
	})
	n.Spec.Unschedulable = true
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/mine", Effect: corev1.TaintEffectNoSchedule})
	_, err := e.c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.waitNode(t, "busy", "unschedulable taint", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule) != nil
	})

	k.postStatus("busy", corev1.ConditionTrue, corev1.ConditionFalse)
	n = e.waitNode(t, "busy", "memory-pressure taint removed", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule) == nil
	})
	assert.NotNil(t, findTaint(n, "example.com/mine", corev1.TaintEffectNoSchedule), "taints of others are kept")
	assert.NotNil(t, findTaint(n, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule))
}

// TestNeverReported: a node that never posts status is Unknown (never
// updated) after the startup grace period counted from its creation.
func TestNeverReported(t *testing.T) {
	e := newEnv(t, nodelifecycle.WithStartupGracePeriod(time.Minute))
	ctx := context.Background()
	node, err := e.c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "silent"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.waitProbe(t, "silent", node.CreationTimestamp.Time)
	// The API server stamps creation by the real clock.
	e.clock.SetTime(node.CreationTimestamp.Add(61 * time.Second))
	n := e.waitNode(t, "silent", "Ready Unknown", func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	c := nodeCondition(n, corev1.NodeReady)
	assert.Equal(t, [3]string{"Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status."}, [3]string{string(c.Status), c.Reason, c.Message})
	e.waitNode(t, "silent", "unreachable taint", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) != nil
	})
}

// TestRestartSeesLostNode: a controller started after a node was lost
// (Ready Unknown already) still marks its pods not ready and taints it.
func TestRestartSeesLostNode(t *testing.T) {
	c := newCluster(t)
	clk := testingclock.NewFakeClock(time.Now())
	k := &fakeKubelet{t: t, c: c, clock: clk}
	k.register("gone", corev1.ConditionUnknown)
	k.runPod("p", "gone")
	c.run(t, map[string]controller.NewFunc{
		nodelifecycle.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return nodelifecycle.New(ctx, nodelifecycle.WithMonitorPeriod(10*time.Millisecond))
		},
	}, func(cfg *controller.ManagerConfig) { cfg.Clock = clk })
	eventually(t, "pod not ready", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && podReady(p) == corev1.ConditionFalse, err
	})
	eventually(t, "unreachable taint", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, "gone", metav1.GetOptions{})
		return err == nil && findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) != nil, err
	})
	_, err := c.client.CoreV1().Nodes().Get(context.Background(), "gone", metav1.GetOptions{})
	assert.False(t, apierrors.IsNotFound(err))
}

func TestOptionsValidate(t *testing.T) {
	c := newCluster(t)
	m, err := controller.NewManager(controller.ManagerConfig{Client: c.client})
	require.NoError(t, err)
	for _, opt := range []nodelifecycle.Option{
		nodelifecycle.WithGracePeriod(0), nodelifecycle.WithStartupGracePeriod(-time.Second), nodelifecycle.WithMonitorPeriod(0),
	} {
		_, err := nodelifecycle.New(m.Context(), opt)
		assert.Error(t, err)
	}
	_, err = tainteviction.New(m.Context(), tainteviction.WithRecheckInterval(0))
	assert.Error(t, err)
}
