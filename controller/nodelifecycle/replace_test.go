package nodelifecycle_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/nodelifecycle"
	"github.com/podkit/podkit/controller/nodelifecycle/tainteviction"
	"github.com/podkit/podkit/controller/replicaset"
)

// clusterSim plays the scheduler and the kubelets of a few nodes by
// polling: unbound pods go round-robin to nodes without NoSchedule or
// NoExecute taints; pods on live nodes are reported Running and Ready and
// their deletions confirmed; a dead node's kubelet does nothing.
type clusterSim struct {
	mu   sync.Mutex
	dead map[string]bool
	next int
}

func (s *clusterSim) kill(node string) {
	s.mu.Lock()
	s.dead[node] = true
	s.mu.Unlock()
}

func (s *clusterSim) isDead(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead[node]
}

func (s *clusterSim) step(ctx context.Context, c *cluster, k *fakeKubelet, nodes []string) {
	var usable []string
	for _, name := range nodes {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect != corev1.TaintEffectPreferNoSchedule }) {
			usable = append(usable, name)
		}
	}
	pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		switch {
		case p.Spec.NodeName == "" && len(usable) > 0:
			s.next++
			node := usable[s.next%len(usable)]
			_ = c.client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
				Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
		case p.Spec.NodeName == "" || s.isDead(p.Spec.NodeName):
		case p.DeletionTimestamp != nil:
			_ = c.client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		case p.Status.Phase != corev1.PodRunning:
			now := metav1.NewTime(k.clock.Now())
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
			_, _ = c.client.CoreV1().Pods("default").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
		}
	}
	for _, name := range nodes {
		s.renew(ctx, c, k, name)
	}
}

// renew renews a live node's lease, holding the lock so that no renewal
// (stamped with a clock the test may step meanwhile) follows kill.
func (s *clusterSim) renew(ctx context.Context, c *cluster, k *fakeKubelet, node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead[node] {
		return
	}
	leases := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return
	}
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(k.clock.Now()))
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// TestLostNodesPodsReplaced: a ReplicaSet's pod on a node whose kubelet
// stops is evicted after its (shortened) toleration and replaced on the
// other node.
func TestLostNodesPodsReplaced(t *testing.T) {
	c := newCluster(t)
	clk := testingclock.NewFakeClock(time.Now().Truncate(time.Second))
	k := &fakeKubelet{t: t, c: c, clock: clk}
	nodes := []string{"node-a", "node-b"}
	for _, n := range nodes {
		k.register(n, corev1.ConditionTrue)
	}
	created := make(chan *nodelifecycle.Controller, 1)
	c.run(t, map[string]controller.NewFunc{
		nodelifecycle.Name: func(ctx *controller.Context) (controller.Controller, error) {
			ctrl, err := nodelifecycle.New(ctx, nodelifecycle.WithMonitorPeriod(10*time.Millisecond))
			created <- ctrl
			return ctrl, err
		},
		tainteviction.Name: func(ctx *controller.Context) (controller.Controller, error) {
			return tainteviction.New(ctx, tainteviction.WithRecheckInterval(10*time.Millisecond))
		},
		replicaset.Name: replicaset.NewFunc(),
	}, func(cfg *controller.ManagerConfig) { cfg.Clock = clk })
	ctrl := <-created

	sim := &clusterSim{dead: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			sim.step(ctx, c, k, nodes)
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	labels := map[string]string{"app": "web"}
	_, err := c.client.AppsV1().ReplicaSets("default").Create(context.Background(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](20)}},
			}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	onNode := func(ctx context.Context) map[string]int {
		out := map[string]int{}
		pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				out[p.Spec.NodeName]++
			}
		}
		return out
	}
	eventually(t, "one running pod per node", func(ctx context.Context) (bool, error) {
		m := onNode(ctx)
		return m["node-a"] == 1 && m["node-b"] == 1, nil
	})
	e := &env{c: c, clock: clk, kubelet: k, ctrl: ctrl}
	e.waitProbe(t, "node-a", clk.Now())

	sim.kill("node-a")
	// Time passes in steps small enough that node-b's renewals (by the
	// simulation, at the fake time) are seen within its grace period.
	clk.Step(30 * time.Second)
	e.waitProbe(t, "node-b", clk.Now())
	clk.Step(11 * time.Second) // node-a silent for 41 s
	e.waitNode(t, "node-a", "unreachable taint", func(n *corev1.Node) bool {
		return findTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) != nil
	})
	e.waitProbe(t, "node-b", clk.Now())
	clk.Step(21 * time.Second) // past the 20 s toleration
	eventually(t, "both replicas running on node-b", func(ctx context.Context) (bool, error) {
		m := onNode(ctx)
		return m["node-b"] == 2 && m["node-a"] == 0, nil
	})
}
