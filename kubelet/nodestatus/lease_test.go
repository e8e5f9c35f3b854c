package nodestatus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func getLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

// TestLeaseRenewal: the lease is created with the node as holder and
// owner, then renewed from its last copy without reading it.
func TestLeaseRenewal(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	c := newController(t, client, newFakeMachine(), clk)
	require.NoError(t, c.register(t.Context()))

	require.NoError(t, c.renewLease(t.Context()))
	lease := getLease(t, client)
	assert.Equal(t, "node-1", *lease.Spec.HolderIdentity)
	assert.Equal(t, int32(40), *lease.Spec.LeaseDurationSeconds)
	assert.True(t, lease.Spec.RenewTime.Time.Equal(t0))
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "uid-node-1"}}, lease.OwnerReferences)
	gets := countActions(client, "get", "leases", "")

	for i := 1; i <= 3; i++ {
		clk.Step(10 * time.Second)
		require.NoError(t, c.renewLease(t.Context()))
		assert.True(t, getLease(t, client).Spec.RenewTime.Time.Equal(t0.Add(time.Duration(i)*10*time.Second)))
	}
	assert.Equal(t, 3, countActions(client, "update", "leases", ""))
	assert.Equal(t, gets+3, countActions(client, "get", "leases", ""), "only the test's own reads: renewals do not GET")
}

// TestLeaseConflict: a conflict refetches the lease and renews it.
func TestLeaseConflict(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	c := newController(t, client, newFakeMachine(), clk)
	require.NoError(t, c.register(t.Context()))
	require.NoError(t, c.renewLease(t.Context()))
	conflicts := 1
	client.PrependReactor("update", "leases", conflictOnce(&conflicts, ""))
	clk.Step(10 * time.Second)
	gets := countActions(client, "get", "leases", "")
	require.NoError(t, c.renewLease(t.Context()))
	assert.Equal(t, gets+1, countActions(client, "get", "leases", ""), "one refetch")
	assert.True(t, getLease(t, client).Spec.RenewTime.Time.Equal(t0.Add(10*time.Second)))
}

// TestLeaseRecreated: a deleted lease is created again.
func TestLeaseRecreated(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	c := newController(t, client, newFakeMachine(), clk)
	require.NoError(t, c.register(t.Context()))
	require.NoError(t, c.renewLease(t.Context()))
	require.NoError(t, client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), "node-1", metav1.DeleteOptions{}))
	clk.Step(10 * time.Second)
	require.NoError(t, c.renewLease(t.Context()))
	lease := getLease(t, client)
	assert.True(t, lease.Spec.RenewTime.Time.Equal(t0.Add(10*time.Second)))
	assert.Len(t, lease.OwnerReferences, 1)
}

// TestRunHeartbeats runs the controller on a fake clock: the lease is
// renewed every 10s and the status is computed every 10s but posted only
// when it changes.
func TestRunHeartbeats(t *testing.T) {
	client := newFakeClient()
	clk := clocktesting.NewFakeClock(t0)
	m := newFakeMachine()
	gets := make(chan struct{}, 100)
	leaseUpdates := make(chan struct{}, 100)
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets <- struct{}{}
		return false, nil, nil
	})
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		leaseUpdates <- struct{}{}
		return false, nil, nil
	})
	c := newController(t, client, m, clk)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-c.Registered()
	<-gets // the first status sync read the node
	for i := 1; i <= 3; i++ {
		for clk.Waiters() < 2 { // the status ticker and the next lease timer
			time.Sleep(time.Millisecond)
		}
		if i == 1 {
			require.Equal(t, 1, countActions(client, "create", "leases", ""))
		}
		if i == 3 {
			m.set(func(m *fakeMachine) { m.signals.MemoryAvailable = 0 })
		}
		clk.Step(10 * time.Second)
		<-leaseUpdates
		<-gets
	}
	cancel()
	require.NoError(t, <-done)
	assert.True(t, getLease(t, client).Spec.RenewTime.Time.Equal(t0.Add(30*time.Second)))
	assert.Equal(t, 1, countActions(client, "update", "nodes", "status"), "only the memory pressure was posted")
	cond := condition(t, getNode(t, client), corev1.NodeMemoryPressure)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	assert.True(t, cond.LastTransitionTime.Time.Equal(t0.Add(30*time.Second)))
}
