package nodestatus

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRegisterNewNode: the registered node carries everything the
// kubelet registers with.
func TestRegisterNewNode(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	rec := record.NewFakeRecorder(20)
	c := newController(t, client, newFakeMachine(), clk, func(cfg *Config) {
		cfg.PodCIDR = "10.244.1.0/24"
		cfg.Labels = map[string]string{"disk": "ssd", "node.kubernetes.io/instance-type": "podkit.small"}
		cfg.Taints = []corev1.Taint{{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule}}
		cfg.Reserved = corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("1Gi")}
		cfg.KubeletPort = 10255
		cfg.Recorder = rec
		cfg.Images = func(ctx context.Context) ([]corev1.ContainerImage, error) {
			return []corev1.ContainerImage{{Names: []string{"busybox:1"}, SizeBytes: 5 << 20}}, nil
		}
	})
	require.NoError(t, c.register(t.Context()))
	select {
	case <-c.Registered():
	default:
		t.Fatal("Registered not closed")
	}

	node := getNode(t, client)
	assert.Equal(t, map[string]string{
		"kubernetes.io/hostname": "node-1", "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH,
		"disk": "ssd", "node.kubernetes.io/instance-type": "podkit.small",
	}, node.Labels)
	assert.Equal(t, "true", node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"])
	assert.Equal(t, "10.244.1.0/24", node.Spec.PodCIDR)
	assert.Equal(t, []string{"10.244.1.0/24"}, node.Spec.PodCIDRs)
	assert.Equal(t, []corev1.Taint{{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule}}, node.Spec.Taints)

	st := node.Status
	assert.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "node-1"}}, st.Addresses)
	for name, want := range map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"} {
		assertQuantity(t, st.Capacity, name, want)
	}
	// allocatable = capacity − reserved − eviction (100Mi memory, 10% disk)
	for name, want := range map[corev1.ResourceName]string{"cpu": "3500m", "memory": "7068Mi", "ephemeral-storage": "92160Mi", "pods": "110"} {
		assertQuantity(t, st.Allocatable, name, want)
	}
	assert.Equal(t, corev1.NodeSystemInfo{MachineID: "m-1", SystemUUID: "u-1", BootID: "b-1", KernelVersion: "6.1.0-test",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "podkit://0.1.0", KubeletVersion: "v1.33.0-podkit",
		OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH}, st.NodeInfo)
	assert.Equal(t, int32(10255), st.DaemonEndpoints.KubeletEndpoint.Port)
	assert.Equal(t, []corev1.ContainerImage{{Names: []string{"busybox:1"}, SizeBytes: 5 << 20}}, st.Images)

	require.Len(t, st.Conditions, 4)
	var types []corev1.NodeConditionType
	for _, cond := range st.Conditions {
		types = append(types, cond.Type)
		assert.True(t, cond.LastHeartbeatTime.Time.Equal(t0), "%s heartbeat", cond.Type)
		assert.True(t, cond.LastTransitionTime.Time.Equal(t0), "%s transition", cond.Type)
	}
	assert.Equal(t, []corev1.NodeConditionType{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}, types, "Ready last")
	for _, want := range []corev1.NodeCondition{
		{Type: "MemoryPressure", Status: "False", Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: "DiskPressure", Status: "False", Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: "PIDPressure", Status: "False", Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: "Ready", Status: "True", Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	} {
		got := condition(t, node, want.Type)
		assert.Equal(t, want.Status, got.Status, "%s", want.Type)
		assert.Equal(t, want.Reason, got.Reason, "%s", want.Type)
		assert.Equal(t, want.Message, got.Message, "%s", want.Type)
	}

	assert.Equal(t, node, c.Node())
	assert.Equal(t, "10.244.1.0/24", c.PodCIDR())
	assert.Equal(t, 1, countActions(client, "create", "nodes", ""))
	assert.Equal(t, 0, countActions(client, "update", "nodes", "status"), "the created node already has its status")
	assert.Contains(t, drain(rec), "Normal NodeReady Node node-1 status is now: NodeReady")
}

// drain returns the events recorded so far.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestRegisterExistingNode reconciles a node left by an earlier kubelet.
func TestRegisterExistingNode(t *testing.T) {
	for _, tc := range []struct {
		name        string
		existingPod string
		wantCIDR    string
	}{
		{"sets a missing pod CIDR", "", "10.244.1.0/24"},
		{"keeps the node's pod CIDR", "10.244.9.0/24", "10.244.9.0/24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			existing := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "old-uid", Labels: map[string]string{
					"kubernetes.io/hostname": "old-name", "kubernetes.io/os": "plan9", "team": "a"}},
				Spec: corev1.NodeSpec{PodCIDR: tc.existingPod},
			}
			if tc.existingPod != "" {
				existing.Spec.PodCIDRs = []string{tc.existingPod}
			}
			client := newFakeClient(existing)
			var seen []string
			c := newController(t, client, newFakeMachine(), clocktesting.NewFakeClock(t0), func(cfg *Config) {
				cfg.PodCIDR = "10.244.1.0/24"
				cfg.OnPodCIDR = func(cidr string) { seen = append(seen, cidr) }
			})
			require.NoError(t, c.register(t.Context()))
			node := getNode(t, client)
			assert.Equal(t, "node-1", node.Labels["kubernetes.io/hostname"])
			assert.Equal(t, runtime.GOOS, node.Labels["kubernetes.io/os"])
			assert.Equal(t, runtime.GOARCH, node.Labels["kubernetes.io/arch"])
			assert.Equal(t, "a", node.Labels["team"], "other labels are left alone")
			assert.Equal(t, "true", node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"])
			assert.Equal(t, tc.wantCIDR, node.Spec.PodCIDR)
			assert.Equal(t, types.UID("old-uid"), node.UID, "the node was not recreated")
			assert.Equal(t, tc.wantCIDR, c.PodCIDR())
			assert.Equal(t, []string{tc.wantCIDR}, seen)
			assert.Equal(t, 1, countActions(client, "update", "nodes", ""), "one reconciling update")
			assert.Equal(t, 1, countActions(client, "update", "nodes", "status"), "then the status")
			assert.Equal(t, "True", string(condition(t, node, corev1.NodeReady).Status))
		})
	}
}

// TestRegisterInvalid: a node the API server rejects as invalid ends Run.
func TestRegisterInvalid(t *testing.T) {
	client := newFakeClient()
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "node-1", nil)
	})
	c := newController(t, client, newFakeMachine(), clocktesting.NewFakeClock(t0))
	err := c.Run(t.Context())
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorIs(t, c.Run(t.Context()), ErrAlreadyRunning)
}

// TestRegisterRetries: transient failures are retried with backoff on
// the controller's clock.
func TestRegisterRetries(t *testing.T) {
	client := newFakeClient()
	failures := 3
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("etcd is sleeping")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(t0)
	c := newController(t, client, newFakeMachine(), clk)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var waits []time.Duration
	for registered := false; !registered; {
		select {
		case <-c.Registered():
			registered = true
		default:
			if clk.HasWaiters() && len(waits) < 3 && countActions(client, "create", "nodes", "") == len(waits)+1 {
				d := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}[len(waits)]
				clk.Step(d)
				waits = append(waits, d)
			}
			time.Sleep(time.Millisecond)
		}
	}
	assert.Equal(t, 4, countActions(client, "create", "nodes", ""))
	cancel()
	require.NoError(t, <-done)
}

// TestSyncBeforeRegistration fails with ErrNotRegistered.
func TestSyncBeforeRegistration(t *testing.T) {
	c := newController(t, newFakeClient(), newFakeMachine(), clocktesting.NewFakeClock(t0))
	assert.ErrorIs(t, c.Sync(t.Context()), ErrNotRegistered)
	assert.Nil(t, c.Node())
	assert.Empty(t, c.PodCIDR())
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"no client", func(c *Config) { c.Client = nil }},
		{"no machine", func(c *Config) { c.Machine = nil }},
		{"no name", func(c *Config) { c.NodeName = "" }},
		{"bad name", func(c *Config) { c.NodeName = "Node_1" }},
		{"bad cidr", func(c *Config) { c.PodCIDR = "10.0.0.0/33" }},
		{"negative pods", func(c *Config) { c.MaxPods = -1 }},
		{"bad port", func(c *Config) { c.KubeletPort = 70000 }},
		{"negative interval", func(c *Config) { c.RenewInterval = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(newFakeClient(), newFakeMachine(), clocktesting.NewFakeClock(t0))
			tc.mutate(&cfg)
			_, err := New(cfg)
			assert.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
	cfg := testConfig(newFakeClient(), newFakeMachine(), clocktesting.NewFakeClock(t0))
	cfg.EvictionHard = map[string]string{"imagefs.available": "15%"}
	_, err := New(cfg)
	assert.True(t, errors.Is(err, ErrInvalidThreshold), "%v", err)
}
