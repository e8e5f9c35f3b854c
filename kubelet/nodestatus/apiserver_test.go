package nodestatus_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/kubelet/nodestatus"
)

// startAPIServer serves podkit's API server on a memory store.
func startAPIServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	st := memory.New()
	srv, err := apiserver.New(apiserver.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = st.Close()
	})
	c, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	require.NoError(t, err)
	return c
}

// machine is a fixed healthy machine whose memory signal the test moves.
type machine struct{ memAvail chan int64 }

func (m *machine) Capacity(context.Context) (corev1.ResourceList, error) {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("2"),
		corev1.ResourceMemory:           resource.MustParse("4Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
		"hugepages-2Mi":                 resource.MustParse("64Mi"),
	}, nil
}

func (m *machine) SystemInfo(context.Context) (nodestatus.SystemInfo, error) {
	return nodestatus.SystemInfo{MachineID: "abc", SystemUUID: "abc", BootID: "boot", KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)"}, nil
}

func (m *machine) Signals(context.Context) (nodestatus.Signals, error) {
	avail := int64(2 << 30)
	select {
	case avail = <-m.memAvail:
	default:
	}
	return nodestatus.Signals{MemoryAvailable: avail, MemoryCapacity: 4 << 30, NodeFSAvailable: 10 << 30, NodeFSCapacity: 20 << 30,
		NodeFSInodesFree: 1000, NodeFSInodes: 2000, PIDsAvailable: 30000, PIDsMax: 32768}, nil
}

// TestAgainstAPIServer registers, posts status and heartbeats against
// podkit's API server, whose validation and status subresource the
// controller's writes must satisfy.
func TestAgainstAPIServer(t *testing.T) {
	client := startAPIServer(t)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	m := &machine{memAvail: make(chan int64, 1)}
	c, err := nodestatus.New(nodestatus.Config{
		Client: client, NodeName: "node-a", PodCIDR: "10.244.3.0/24", Machine: m, Clock: clk,
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}},
		Reserved:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		Logger:    slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-c.Registered()

	node, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "10.244.3.0/24", node.Spec.PodCIDR)
	assert.Equal(t, "node-a", node.Labels["kubernetes.io/hostname"])
	mem := node.Status.Allocatable[corev1.ResourceMemory]
	assert.Equal(t, "3676Mi", mem.String(), "4Gi − 256Mi reserved − 100Mi eviction − 64Mi hugepages")
	assert.Equal(t, corev1.ConditionTrue, readyStatus(node))
	assert.Equal(t, "192.0.2.10", node.Status.Addresses[0].Address)
	assert.True(t, equality.Semantic.DeepEqual(node.Status.Allocatable, c.Node().Status.Allocatable), "Node() has the allocatable")

	for {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-a", metav1.GetOptions{})
		if err == nil {
			require.Len(t, l.OwnerReferences, 1)
			assert.Equal(t, node.UID, l.OwnerReferences[0].UID, "the lease goes with its node")
			assert.Equal(t, "node-a", *l.Spec.HolderIdentity)
			assert.Equal(t, int32(40), *l.Spec.LeaseDurationSeconds)
			break
		}
		require.True(t, apierrors.IsNotFound(err), "%v", err)
		time.Sleep(time.Millisecond) // the lease goroutine has not created it yet
	}

	m.memAvail <- 50 << 20 // under 100Mi
	require.NoError(t, c.Sync(ctx))
	node, err = client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeMemoryPressure {
			assert.Equal(t, corev1.ConditionTrue, cond.Status)
			assert.Equal(t, "KubeletHasInsufficientMemory", cond.Reason)
		}
	}
	assert.Equal(t, "10.244.3.0/24", node.Spec.PodCIDR, "the status update left the spec alone")

	cancel()
	require.NoError(t, <-done)
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestAgainstAPIServerInvalid: a node the API server rejects ends Run.
func TestAgainstAPIServerInvalid(t *testing.T) {
	client := startAPIServer(t)
	c, err := nodestatus.New(nodestatus.Config{
		Client: client, NodeName: "node-b", Machine: &machine{}, Clock: clocktesting.NewFakeClock(time.Now()),
		Taints: []corev1.Taint{{Key: "k", Effect: "Sometimes"}},
		Logger: slog.New(slog.DiscardHandler), Addresses: []corev1.NodeAddress{},
	})
	require.NoError(t, err)
	err = c.Run(t.Context())
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.taints[0].effect")
}
