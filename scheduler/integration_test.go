package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIntegrationBindsPendingPod(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("worker-1", "4", "8Gi"))
	c.startScheduler(t, nil)
	c.createPod(t, makePod("my-pod", requests("100m", "64Mi")))
	assert.Equal(t, "worker-1", c.waitBound(t, "default", "my-pod"))

	cond := c.podCondition(t, "default", "my-pod")
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	waitFor(t, "Scheduled event", func() (bool, error) {
		return len(c.events(t, "default", "my-pod", "Scheduled")) == 1, nil
	})
	ev := c.events(t, "default", "my-pod", "Scheduled")[0]
	assert.Equal(t, "Successfully assigned default/my-pod to worker-1", ev.Message)
	assert.Equal(t, corev1.EventTypeNormal, ev.Type)
	assert.Equal(t, "default-scheduler", ev.Source.Component)
}

func TestIntegrationUnschedulableThenNodeAppears(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("small", "1", "1Gi"))
	c.createNode(t, makeNode("cp-1", "8", "8Gi", withTaint("node-role.kubernetes.io/control-plane", "", corev1.TaintEffectNoSchedule)))
	c.createNode(t, makeNode("cp-2", "8", "8Gi", withTaint("node-role.kubernetes.io/control-plane", "", corev1.TaintEffectNoSchedule)))
	c.startScheduler(t, nil)
	c.createPod(t, makePod("big", requests("2", "")))

	const want = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }."
	waitFor(t, "PodScheduled=False", func() (bool, error) {
		cond := c.podCondition(t, "default", "big")
		return cond != nil && cond.Status == corev1.ConditionFalse, nil
	})
	cond := c.podCondition(t, "default", "big")
	assert.Equal(t, corev1.PodReasonUnschedulable, cond.Reason)
	assert.Equal(t, want, cond.Message)
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		return len(c.events(t, "default", "big", "FailedScheduling")) > 0, nil
	})
	ev := c.events(t, "default", "big", "FailedScheduling")[0]
	assert.Equal(t, want, ev.Message)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)

	// The pod waits for a cluster event; a fitting node wakes it.
	added := time.Now()
	c.createNode(t, makeNode("big-node", "4", "8Gi"))
	assert.Equal(t, "big-node", c.waitBound(t, "default", "big"))
	t.Logf("scheduled %v after the node appeared", time.Since(added))
	cond = c.podCondition(t, "default", "big")
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
}

func TestIntegrationPlacement(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("a1", "4", "8Gi", withLabels("disk", "ssd", corev1.LabelTopologyZone, "a")))
	c.createNode(t, makeNode("a2", "4", "8Gi", withLabels(corev1.LabelTopologyZone, "a")))
	c.createNode(t, makeNode("b1", "4", "8Gi", withLabels(corev1.LabelTopologyZone, "b"),
		withTaint("dedicated", "db", corev1.TaintEffectNoSchedule)))
	c.startScheduler(t, nil)

	// nodeSelector
	c.createPod(t, makePod("ssd", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }))
	assert.Equal(t, "a1", c.waitBound(t, "default", "ssd"))

	// toleration + required node affinity to zone b
	c.createPod(t, makePod("db", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}},
			}}},
		}}
	}))
	assert.Equal(t, "b1", c.waitBound(t, "default", "db"))

	// required anti-affinity to itself across replicas: one per node among
	// the untainted nodes, the third cannot fit.
	anti := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	}
	c.createPod(t, makePod("web-1", anti))
	c.createPod(t, makePod("web-2", anti))
	n1, n2 := c.waitBound(t, "default", "web-1"), c.waitBound(t, "default", "web-2")
	assert.ElementsMatch(t, []string{"a1", "a2"}, []string{n1, n2})
	c.createPod(t, makePod("web-3", anti))
	waitFor(t, "web-3 unschedulable", func() (bool, error) {
		cond := c.podCondition(t, "default", "web-3")
		return cond != nil && cond.Status == corev1.ConditionFalse, nil
	})
	assert.Equal(t, "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 2 node(s) didn't match pod anti-affinity rules.",
		c.podCondition(t, "default", "web-3").Message)

	// Deleting a replica frees its node for the waiting one.
	require.NoError(t, c.client.CoreV1().Pods("default").Delete(context.Background(), "web-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	assert.Equal(t, n1, c.waitBound(t, "default", "web-3"))
}

func TestIntegrationNodeUpdateWakesPod(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("tainted", "4", "8Gi", withTaint("maintenance", "", corev1.TaintEffectNoSchedule)))
	c.startScheduler(t, nil)
	c.createPod(t, makePod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"tier": "gold"} }))
	waitFor(t, "unschedulable", func() (bool, error) {
		cond := c.podCondition(t, "default", "p")
		return cond != nil && cond.Status == corev1.ConditionFalse, nil
	})
	assert.Equal(t, "0/1 nodes are available: 1 node(s) had untolerated taint {maintenance: }.", c.podCondition(t, "default", "p").Message)

	ctx := context.Background()
	update := func(f func(n *corev1.Node)) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, "tainted", metav1.GetOptions{})
		require.NoError(t, err)
		f(n)
		_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	update(func(n *corev1.Node) { n.Spec.Taints = nil })
	// Retried on the node update: now the selector is what does not fit.
	waitFor(t, "new reason", func() (bool, error) {
		return c.podCondition(t, "default", "p").Message == "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.", nil
	})
	update(func(n *corev1.Node) { n.Labels["tier"] = "gold" })
	assert.Equal(t, "tainted", c.waitBound(t, "default", "p"))
}
