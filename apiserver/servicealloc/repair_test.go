package servicealloc

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// store is a list of stored Services for Sync and Repair; during, when set,
// runs while a List is in progress.
type store struct {
	mu     sync.Mutex
	svcs   []*corev1.Service
	err    error
	during func()
	lists  int
}

func (s *store) list(context.Context) ([]*corev1.Service, error) {
	s.mu.Lock()
	out, err, during := append([]*corev1.Service(nil), s.svcs...), s.err, s.during
	s.lists++
	s.mu.Unlock()
	if during != nil {
		during()
	}
	return out, err
}

func (s *store) set(svcs ...*corev1.Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.svcs = svcs
}

func TestSyncLoadsStoredServices(t *testing.T) {
	ctx := context.Background()
	st := &store{svcs: []*corev1.Service{
		svc("a", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.1")),
		svc("b", corev1.ServiceTypeNodePort, withClusterIP("10.100.0.7"), withNodePorts(30080)),
		svc("c", corev1.ServiceTypeClusterIP, withClusterIP("10.0.0.9")),   // the range changed
		svc("d", corev1.ServiceTypeClusterIP, withClusterIP("10.100.0.7")), // written around the allocator
		svc("e", corev1.ServiceTypeClusterIP, withClusterIP(corev1.ClusterIPNone)),
		svc("f", corev1.ServiceTypeExternalName),
	}}
	a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, st.list)
	assert.False(t, a.Synced())
	rep, err := a.Repair(ctx) // before Sync: syncs
	require.NoError(t, err)
	assert.Empty(t, rep.AddedIPs)
	require.True(t, a.Synced())
	assert.Equal(t, []netip.Addr{mustAddr("10.96.0.1"), mustAddr("10.100.0.7")}, a.IPs().Allocated())
	assert.Equal(t, []int{30080}, a.Ports().Allocated())

	// A second Sync does nothing: the list is read once.
	require.NoError(t, a.Sync(ctx))
	assert.Equal(t, 1, st.lists)

	_, err = a.Allocate(ctx, svc("g", corev1.ServiceTypeClusterIP, withClusterIP("10.100.0.7")), false)
	assert.ErrorContains(t, err, "provided IP is already allocated")

	rep, err = a.Repair(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[netip.Addr][]types.NamespacedName{
		mustAddr("10.100.0.7"): {{Namespace: "default", Name: "b"}, {Namespace: "default", Name: "d"}},
	}, rep.DuplicateIPs)
	assert.Equal(t, map[string]types.NamespacedName{"10.0.0.9": {Namespace: "default", Name: "c"}}, rep.OutOfRangeIPs)
	assert.Equal(t, 6, rep.Services)
}

func TestSyncError(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	st := &store{err: boom}
	a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, st.list)
	_, err := a.Allocate(ctx, svc("a", corev1.ServiceTypeClusterIP), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loading services: boom")
	assert.False(t, a.Synced(), "a failed load is retried by the next allocation")
	st.err = nil
	_, err = a.Allocate(ctx, svc("a", corev1.ServiceTypeClusterIP), false)
	require.NoError(t, err)
	assert.True(t, a.Synced())
}

// TestRepair: values held by stored services are added at once; values
// with no stored owner are released only after LeakThreshold repairs.
func TestRepair(t *testing.T) {
	ctx := context.Background()
	st := &store{}
	a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, st.list)
	require.NoError(t, a.Sync(ctx))

	// Another writer stored a service this allocator never saw.
	st.set(svc("other", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.30"), withNodePorts(30030)))
	rep, err := a.Repair(ctx)
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{mustAddr("10.96.0.30")}, rep.AddedIPs)
	assert.Equal(t, []int{30030}, rep.AddedPorts)
	assert.True(t, a.IPs().Has(mustAddr("10.96.0.30")))

	// A reservation whose service never got stored (a lost create).
	leaked := svc("lost", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.31"), withNodePorts(30031))
	txn, err := a.Allocate(ctx, leaked, false)
	require.NoError(t, err)
	txn.Commit()
	for i := 1; i < LeakThreshold; i++ {
		rep, err = a.Repair(ctx)
		require.NoError(t, err)
		assert.Empty(t, rep.ReleasedIPs, "repair %d must not release yet: the create may still be on its way", i)
		assert.True(t, a.IPs().Has(mustAddr("10.96.0.31")))
	}
	rep, err = a.Repair(ctx)
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{mustAddr("10.96.0.31")}, rep.ReleasedIPs)
	assert.Equal(t, []int{30031}, rep.ReleasedPorts)
	assert.False(t, a.IPs().Has(mustAddr("10.96.0.31")))
	assert.True(t, a.IPs().Has(mustAddr("10.96.0.30")), "a stored service's IP is never released")

	// A slow create: found owner-less twice, then stored — its count resets.
	slow := svc("slow", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.32"))
	txn, err = a.Allocate(ctx, slow, false)
	require.NoError(t, err)
	for i := 1; i < LeakThreshold; i++ {
		_, err = a.Repair(ctx)
		require.NoError(t, err)
	}
	st.set(svc("other", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.30"), withNodePorts(30030)), slow)
	txn.Commit()
	for i := 0; i < 2*LeakThreshold; i++ {
		rep, err = a.Repair(ctx)
		require.NoError(t, err)
		assert.Empty(t, rep.ReleasedIPs)
	}
	assert.True(t, a.IPs().Has(mustAddr("10.96.0.32")))
}

// TestRepairSkipsChangesWhileListing: a release during the list (the list
// still shows the deleted service) must not be undone by the repair, and an
// allocation during the list must not count as a leak.
func TestRepairSkipsChangesWhileListing(t *testing.T) {
	ctx := context.Background()
	gone := svc("gone", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.40"))
	st := &store{svcs: []*corev1.Service{gone}}
	a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, st.list)
	require.NoError(t, a.Sync(ctx))
	require.True(t, a.IPs().Has(mustAddr("10.96.0.40")))

	var fresh *corev1.Service
	st.during = func() {
		a.Release(gone) // deleted while the (stale) list is read
		fresh = svc("fresh", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.41"))
		txn, err := a.Allocate(ctx, fresh, false)
		assert.NoError(t, err)
		txn.Commit()
	}
	_, err := a.Repair(ctx)
	require.NoError(t, err)
	assert.False(t, a.IPs().Has(mustAddr("10.96.0.40")), "the stale list must not re-add a just-released IP")
	assert.True(t, a.IPs().Has(mustAddr("10.96.0.41")))

	st.during = nil
	st.set(fresh)
	for i := 0; i < 2*LeakThreshold; i++ {
		_, err = a.Repair(ctx)
		require.NoError(t, err)
	}
	assert.True(t, a.IPs().Has(mustAddr("10.96.0.41")))
	_, err = a.Allocate(ctx, svc("again", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.40")), false)
	assert.NoError(t, err, "the deleted service's IP is free")
}

// TestConcurrentAllocate: many services at once in a range barely large
// enough get distinct IPs and node ports; the rest fail cleanly.
func TestConcurrentAllocate(t *testing.T) {
	ctx := context.Background()
	a := newAllocator(t, "10.0.0.0/25", utilnet.PortRange{Base: 30000, Size: 200}, nil)
	const n = 150 // 126 addresses
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		ips    = map[string]string{}
		ports  = map[int32]string{}
		failed int
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := svc("s", corev1.ServiceTypeNodePort)
			s.Name = s.Name + string(rune('a'+i%26)) + string(rune('a'+i/26))
			txn, err := a.Allocate(ctx, s, false)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			txn.Commit()
			assert.Empty(t, ips[s.Spec.ClusterIP], "%s handed to %s and %s", s.Spec.ClusterIP, ips[s.Spec.ClusterIP], s.Name)
			ips[s.Spec.ClusterIP] = s.Name
			assert.Empty(t, ports[s.Spec.Ports[0].NodePort])
			ports[s.Spec.Ports[0].NodePort] = s.Name
		}()
	}
	wg.Wait()
	assert.Len(t, ips, 126)
	assert.Equal(t, n-126, failed)
	assert.Equal(t, 126, a.IPs().Used())
	assert.Equal(t, 126, a.Ports().Used(), "node ports of failed creates are given back")
}
