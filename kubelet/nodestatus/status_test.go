package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestStatusPostedOnlyWhenChanged: an unchanged status waits for the
// report frequency; any change is posted at once.
func TestStatusPostedOnlyWhenChanged(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	m := newFakeMachine()
	c := newController(t, client, m, clk)
	require.NoError(t, c.register(t.Context()))
	posts := func() int { return countActions(client, "update", "nodes", "status") }
	require.Equal(t, 0, posts())

	for i := 0; i < 3; i++ {
		clk.Step(10 * time.Second)
		require.NoError(t, c.Sync(t.Context()))
	}
	assert.Equal(t, 0, posts(), "heartbeats alone are not posted")
	assert.True(t, condition(t, getNode(t, client), corev1.NodeReady).LastHeartbeatTime.Time.Equal(t0))
	assert.True(t, condition(t, c.Node(), corev1.NodeReady).LastHeartbeatTime.Time.Equal(t0.Add(30*time.Second)),
		"Node() has the latest computation")

	m.set(func(m *fakeMachine) { m.info.KernelVersion = "6.2.0" })
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	require.Equal(t, 1, posts(), "a change is posted")
	node := getNode(t, client)
	assert.Equal(t, "6.2.0", node.Status.NodeInfo.KernelVersion)
	ready := condition(t, node, corev1.NodeReady)
	assert.True(t, ready.LastHeartbeatTime.Time.Equal(t0.Add(40*time.Second)), "the post carries the heartbeat")
	assert.True(t, ready.LastTransitionTime.Time.Equal(t0), "no transition")

	clk.Step(4 * time.Minute)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, 1, posts(), "4m after the last post")
	clk.Step(time.Minute)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, 2, posts(), "5m after the last post: reported although unchanged")
}

// TestPressureConditions walks each pressure condition on and off
// through the transition period.
func TestPressureConditions(t *testing.T) {
	for _, tc := range []struct {
		typ                   corev1.NodeConditionType
		under                 func(s *Signals)
		onReason, onMessage   string
		offReason, offMessage string
		onEvent, offEvent     string
	}{
		{corev1.NodeMemoryPressure, func(s *Signals) { s.MemoryAvailable = 99 * mi },
			"KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
			"KubeletHasSufficientMemory", "kubelet has sufficient memory available", "NodeHasInsufficientMemory", "NodeHasSufficientMemory"},
		{corev1.NodeDiskPressure, func(s *Signals) { s.NodeFSAvailable = 9 * gi },
			"KubeletHasDiskPressure", "kubelet has disk pressure",
			"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasDiskPressure", "NodeHasNoDiskPressure"},
		{corev1.NodeDiskPressure, func(s *Signals) { s.NodeFSInodesFree = 99_999 },
			"KubeletHasDiskPressure", "kubelet has disk pressure",
			"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasDiskPressure", "NodeHasNoDiskPressure"},
		{corev1.NodePIDPressure, func(s *Signals) { s.PIDsAvailable = 1000 },
			"KubeletHasInsufficientPID", "kubelet has insufficient PID available",
			"KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasInsufficientPID", "NodeHasSufficientPID"},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.typ, tc.onReason), func(t *testing.T) {
			client := newFakeClient()
			clk := clocktesting.NewFakeClock(t0)
			m := newFakeMachine()
			healthy := m.signals
			rec := record.NewFakeRecorder(50)
			c := newController(t, client, m, clk, func(cfg *Config) {
				cfg.PressureTransitionPeriod = time.Minute
				cfg.Recorder = rec
			})
			require.NoError(t, c.register(t.Context()))
			drain(rec)

			step := func(d time.Duration) corev1.NodeCondition {
				clk.Step(d)
				require.NoError(t, c.Sync(t.Context()))
				return condition(t, getNode(t, client), tc.typ)
			}
			m.set(func(m *fakeMachine) { tc.under(&m.signals) })
			cond := step(10 * time.Second)
			assert.Equal(t, corev1.ConditionTrue, cond.Status)
			assert.Equal(t, tc.onReason, cond.Reason)
			assert.Equal(t, tc.onMessage, cond.Message)
			assert.True(t, cond.LastTransitionTime.Time.Equal(t0.Add(10*time.Second)))
			assert.Equal(t, []string{"Normal " + tc.onEvent + " Node node-1 status is now: " + tc.onEvent}, drain(rec))
			assert.Equal(t, corev1.ConditionTrue, condition(t, getNode(t, client), corev1.NodeReady).Status,
				"pressure does not make the node NotReady")

			m.set(func(m *fakeMachine) { m.signals = healthy })
			cond = step(30 * time.Second)
			assert.Equal(t, corev1.ConditionTrue, cond.Status, "held through the transition period")
			cond = step(29 * time.Second)
			assert.Equal(t, corev1.ConditionTrue, cond.Status, "59s after the last observation")
			cond = step(time.Second)
			assert.Equal(t, corev1.ConditionFalse, cond.Status, "a minute after the last observation")
			assert.Equal(t, tc.offReason, cond.Reason)
			assert.Equal(t, tc.offMessage, cond.Message)
			assert.True(t, cond.LastTransitionTime.Time.Equal(t0.Add(70*time.Second)))
			assert.Equal(t, []string{"Normal " + tc.offEvent + " Node node-1 status is now: " + tc.offEvent}, drain(rec))
		})
	}
}

// TestPressureWithoutTransitionPeriod follows the signal exactly.
func TestPressureWithoutTransitionPeriod(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	m := newFakeMachine()
	c := newController(t, client, m, clk, func(cfg *Config) { cfg.PressureTransitionPeriod = -1 })
	require.NoError(t, c.register(t.Context()))
	m.set(func(m *fakeMachine) { m.signals.MemoryAvailable = 0 })
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, corev1.ConditionTrue, condition(t, c.Node(), corev1.NodeMemoryPressure).Status)
	m.set(func(m *fakeMachine) { m.signals.MemoryAvailable = gi })
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, corev1.ConditionFalse, condition(t, c.Node(), corev1.NodeMemoryPressure).Status)

	// A failed observation leaves the condition as it was.
	m.set(func(m *fakeMachine) { m.sigErr = errors.New("meminfo unreadable") })
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, corev1.ConditionFalse, condition(t, c.Node(), corev1.NodeMemoryPressure).Status)
}

// TestReadyCondition: Ready follows Config.Ready and the capacity the
// node reports, keeping lastTransitionTime while it holds.
func TestReadyCondition(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	m := newFakeMachine()
	var health error
	rec := record.NewFakeRecorder(50)
	c := newController(t, client, m, clk, func(cfg *Config) {
		cfg.Ready = func() error { return health }
		cfg.Recorder = rec
	})
	require.NoError(t, c.register(t.Context()))
	drain(rec)
	ready := func(d time.Duration) corev1.NodeCondition {
		clk.Step(d)
		require.NoError(t, c.Sync(t.Context()))
		return condition(t, getNode(t, client), corev1.NodeReady)
	}

	health = errors.New("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:no bridge")
	cond := ready(10 * time.Second)
	assert.Equal(t, corev1.ConditionFalse, cond.Status)
	assert.Equal(t, "KubeletNotReady", cond.Reason)
	assert.Equal(t, health.Error(), cond.Message)
	assert.True(t, cond.LastTransitionTime.Time.Equal(t0.Add(10*time.Second)))
	assert.Equal(t, []string{"Normal NodeNotReady Node node-1 status is now: NodeNotReady"}, drain(rec))

	m.set(func(m *fakeMachine) { delete(m.capacity, corev1.ResourceEphemeralStorage) })
	cond = ready(10 * time.Second)
	assert.Equal(t, "["+health.Error()+", missing node capacity for resources: ephemeral-storage]", cond.Message)
	assert.True(t, cond.LastTransitionTime.Time.Equal(t0.Add(10*time.Second)), "still False: no transition")
	assert.Empty(t, drain(rec))

	health = nil
	cond = ready(10 * time.Second)
	assert.Equal(t, "missing node capacity for resources: ephemeral-storage", cond.Message)

	m.set(func(m *fakeMachine) { m.capacity[corev1.ResourceEphemeralStorage] = q("100Gi") })
	cond = ready(10 * time.Second)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	assert.Equal(t, "KubeletReady", cond.Reason)
	assert.Equal(t, "kubelet is posting ready status", cond.Message)
	assert.True(t, cond.LastTransitionTime.Time.Equal(t0.Add(40*time.Second)))
	assert.Equal(t, []string{"Normal NodeReady Node node-1 status is now: NodeReady"}, drain(rec))
	assert.Equal(t, corev1.NodeReady, getNode(t, client).Status.Conditions[3].Type, "Ready stays last")
}

// TestPodCIDRFromControlPlane: without a configured CIDR the node's is
// learnt once the control plane assigns it.
func TestPodCIDRFromControlPlane(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	var seen []string
	c := newController(t, client, newFakeMachine(), clk, func(cfg *Config) {
		cfg.OnPodCIDR = func(cidr string) { seen = append(seen, cidr) }
	})
	require.NoError(t, c.register(t.Context()))
	assert.Empty(t, getNode(t, client).Spec.PodCIDR, "the kubelet does not pick one")
	assert.Empty(t, c.PodCIDR())
	assert.Empty(t, seen)

	node := getNode(t, client) // the node IPAM controller's assignment
	node.Spec.PodCIDR, node.Spec.PodCIDRs = "10.244.7.0/24", []string{"10.244.7.0/24"}
	_, err := client.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
	require.NoError(t, err)

	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, "10.244.7.0/24", c.PodCIDR())
	assert.Equal(t, []string{"10.244.7.0/24"}, seen)
	assert.Equal(t, 1, countActions(client, "update", "nodes", "status"), "a new pod CIDR is reported at once")

	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, []string{"10.244.7.0/24"}, seen, "told once")
}

// TestRequiredLabelsRestored: a removed os label comes back.
func TestRequiredLabelsRestored(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	c := newController(t, client, newFakeMachine(), clk)
	require.NoError(t, c.register(t.Context()))
	node := getNode(t, client)
	delete(node.Labels, corev1.LabelOSStable)
	_, err := client.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
	require.NoError(t, err)
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.NotEmpty(t, getNode(t, client).Labels[corev1.LabelOSStable])
}

// TestImages: the largest images first, at most MaxImages, five names.
func TestImages(t *testing.T) {
	var images []corev1.ContainerImage
	for i := 0; i < 60; i++ {
		images = append(images, corev1.ContainerImage{Names: []string{fmt.Sprintf("img%d", i)}, SizeBytes: int64((i * 37) % 61)})
	}
	images[0].Names = []string{"a", "b", "c", "d", "e", "f", "g"}
	images[0].SizeBytes = 1000
	images[1].SizeBytes, images[2].SizeBytes = 500, 500

	top := topImages(images, 50)
	require.Len(t, top, 50)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, top[0].Names, "five names at most")
	assert.Equal(t, []string{"img1"}, top[1].Names, "ties keep their order")
	assert.Equal(t, []string{"img2"}, top[2].Names)
	for i := 1; i < len(top); i++ {
		assert.GreaterOrEqual(t, top[i-1].SizeBytes, top[i].SizeBytes)
	}
	assert.Len(t, topImages(images, -1), 60)
	assert.Len(t, images[0].Names, 7, "the input is not changed")

	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	var listErr error
	c := newController(t, client, newFakeMachine(), clk, func(cfg *Config) {
		cfg.MaxImages = 3
		cfg.Images = func(context.Context) ([]corev1.ContainerImage, error) { return images, listErr }
	})
	require.NoError(t, c.register(t.Context()))
	got := getNode(t, client).Status.Images
	require.Len(t, got, 3)
	assert.Equal(t, int64(1000), got[0].SizeBytes)

	listErr = errors.New("image store locked")
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Empty(t, getNode(t, client).Status.Images, "an error empties the list, as in the kubelet")
}

// TestStatusConflictRetried: a conflicting writer costs a retry.
func TestStatusConflictRetried(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	m := newFakeMachine()
	c := newController(t, client, m, clk)
	require.NoError(t, c.register(t.Context()))
	conflicts := 2
	client.PrependReactor("update", "nodes", conflictOnce(&conflicts, "status"))
	m.set(func(m *fakeMachine) { m.info.OSImage = "Debian GNU/Linux 13 (trixie)" })
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	assert.Equal(t, "Debian GNU/Linux 13 (trixie)", getNode(t, client).Status.NodeInfo.OSImage)
	assert.Equal(t, 3, countActions(client, "update", "nodes", "status"))
}

// TestMachineFailure: capacity that cannot be read reports zero cpu and
// memory, keeps pods, and makes the node NotReady for what is missing.
func TestMachineFailure(t *testing.T) {
	client := newFakeClient()
	m := newFakeMachine()
	m.capErr = errors.New("meminfo unreadable")
	c := newController(t, client, m, clocktesting.NewFakeClock(t0))
	require.NoError(t, c.register(t.Context()))
	node := getNode(t, client)
	assertQuantity(t, node.Status.Capacity, corev1.ResourceCPU, "0")
	assertQuantity(t, node.Status.Capacity, corev1.ResourceMemory, "0")
	assertQuantity(t, node.Status.Capacity, corev1.ResourcePods, "110")
	ready := condition(t, node, corev1.NodeReady)
	assert.Equal(t, corev1.ConditionFalse, ready.Status)
	assert.Equal(t, "missing node capacity for resources: ephemeral-storage", ready.Message)
}

// TestNodeDeletedIsRegisteredAgain: a node deleted under a running
// kubelet comes back at the next sync (podkit's choice; the kubelet would
// fail until restarted).
func TestNodeDeletedIsRegisteredAgain(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	c := newController(t, client, newFakeMachine(), clk, func(cfg *Config) { cfg.PodCIDR = "10.244.1.0/24" })
	require.NoError(t, c.register(t.Context()))
	require.NoError(t, client.CoreV1().Nodes().Delete(context.Background(), "node-1", metav1.DeleteOptions{}))
	clk.Step(10 * time.Second)
	require.NoError(t, c.Sync(t.Context()))
	node := getNode(t, client)
	assert.Equal(t, "10.244.1.0/24", node.Spec.PodCIDR)
	assert.Equal(t, corev1.ConditionTrue, condition(t, node, corev1.NodeReady).Status)
	assert.Equal(t, 2, countActions(client, "create", "nodes", ""))
}
