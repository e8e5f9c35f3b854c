package servicealloc_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// Two API servers share one store: their allocators claim values there.
// The ranges are small (30 addresses, 24 node ports) so that concurrent
// creates through both collide often and the ranges fill up.

var (
	raceCIDR  = netip.MustParsePrefix("10.100.0.0/27")
	racePorts = utilnet.PortRange{Base: 31000, Size: 24}
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func nodePortService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

// services is the Services "stored" so far, shared by the allocators.
type services struct {
	mu   sync.Mutex
	svcs map[string]*corev1.Service
}

func (s *services) put(svc *corev1.Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svcs == nil {
		s.svcs = map[string]*corev1.Service{}
	}
	s.svcs[svc.Name] = svc
}

func (s *services) list(context.Context) ([]*corev1.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.Service
	for _, svc := range s.svcs {
		out = append(out, svc.DeepCopy())
	}
	return out, nil
}

func sharedAllocator(t *testing.T, st storage.Store, svcs *services) *servicealloc.Allocator {
	t.Helper()
	a, err := servicealloc.New(servicealloc.Config{ClusterIPRange: raceCIDR, NodePortRange: racePorts,
		List: svcs.list, Claims: servicealloc.NewStoreClaims(st, nil), Logger: quiet()})
	require.NoError(t, err)
	return a
}

// raceAllocators creates NodePort services concurrently through two
// allocators, more than the ranges hold: every value is handed out once.
func raceAllocators(t *testing.T, a, b *servicealloc.Allocator) {
	ctx := context.Background()
	const perAllocator = 20
	var (
		mu    sync.Mutex
		ips   = map[string]string{}
		ports = map[int32]string{}
		full  int
		wg    sync.WaitGroup
	)
	for i, alloc := range []*servicealloc.Allocator{a, b} {
		for j := 0; j < perAllocator; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := nodePortService(fmt.Sprintf("svc-%d-%d", i, j))
				txn, err := alloc.Allocate(ctx, svc, false)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					assert.True(t, apierrors.IsInternalError(err), "%v", err)
					assert.Contains(t, err.Error(), "range is full")
					full++
					return
				}
				txn.Commit()
				if other, dup := ips[svc.Spec.ClusterIP]; dup {
					t.Errorf("cluster IP %s handed out to %s and %s", svc.Spec.ClusterIP, other, svc.Name)
				}
				if other, dup := ports[svc.Spec.Ports[0].NodePort]; dup {
					t.Errorf("node port %d handed out to %s and %s", svc.Spec.Ports[0].NodePort, other, svc.Name)
				}
				ips[svc.Spec.ClusterIP] = svc.Name
				ports[svc.Spec.Ports[0].NodePort] = svc.Name
			}()
		}
	}
	wg.Wait()
	assert.Len(t, ports, racePorts.Size, "every node port handed out once")
	assert.Equal(t, 2*perAllocator-racePorts.Size, full, "the rest found the node port range full")
}

func TestSharedStoreNoDuplicates(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	svcs := &services{}
	raceAllocators(t, sharedAllocator(t, st, svcs), sharedAllocator(t, st, svcs))
}

func TestSharedEtcdNoDuplicates(t *testing.T) {
	c := etcdtest.Start(t)
	open := func() storage.Store {
		st, err := etcd.New(context.Background(), etcd.Config{Endpoints: c.Endpoints(), Prefix: "/alloc-race/registry",
			Codec: scheme.StorageCodec(scheme.New()), TLS: c.ClientTLS(t)}, etcd.WithLogger(quiet()), etcd.WithCompactionInterval(0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	// Two stores: two API servers' connections to one etcd.
	svcs := &services{}
	raceAllocators(t, sharedAllocator(t, open(), svcs), sharedAllocator(t, open(), svcs))
}

// TestSharedStaleHints: an allocator's hints may be stale both ways; the
// records decide.
func TestSharedStaleHints(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	svcs := &services{}
	a, b := sharedAllocator(t, st, svcs), sharedAllocator(t, st, svcs)
	require.NoError(t, a.Sync(ctx))
	require.NoError(t, b.Sync(ctx))

	// A value a took, b has never heard of: refused with Kubernetes' message.
	x := nodePortService("x")
	x.Spec.ClusterIP, x.Spec.ClusterIPs = "10.100.0.9", []string{"10.100.0.9"}
	x.Spec.Ports[0].NodePort = 31001
	txn, err := a.Allocate(ctx, x, false)
	require.NoError(t, err)
	txn.Commit()
	svcs.put(x)
	y := nodePortService("y")
	y.Spec.ClusterIP, y.Spec.ClusterIPs = "10.100.0.9", []string{"10.100.0.9"}
	_, err = b.Allocate(ctx, y, false)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), `spec.clusterIPs: Invalid value: ["10.100.0.9"]: failed to allocate IP 10.100.0.9: provided IP is already allocated`)
	z := nodePortService("z")
	z.Spec.Ports[0].NodePort = 31001
	_, err = b.Allocate(ctx, z, false)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.ports[0].nodePort: Invalid value: 31001: provided port is already allocated")

	// a releases them; b's hints still say taken, the records say free.
	a.Release(x)
	y = nodePortService("y")
	y.Spec.ClusterIP, y.Spec.ClusterIPs = "10.100.0.9", []string{"10.100.0.9"}
	y.Spec.Ports[0].NodePort = 31001
	txn, err = b.Allocate(ctx, y, false)
	require.NoError(t, err)
	txn.Commit()
}

// TestSharedFullRangeRefreshes: an allocator whose hints call the range
// full looks at the records before giving up.
func TestSharedFullRangeRefreshes(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	svcs := &services{}
	a, b := sharedAllocator(t, st, svcs), sharedAllocator(t, st, svcs)
	var held []*corev1.Service
	for i := 0; ; i++ {
		svc := nodePortService(fmt.Sprintf("fill-%d", i))
		txn, err := a.Allocate(ctx, svc, false)
		if err != nil {
			require.Contains(t, err.Error(), "range is full")
			break
		}
		txn.Commit()
		held = append(held, svc)
	}
	require.Len(t, held, racePorts.Size)
	_, err := b.Allocate(ctx, nodePortService("none-left"), false)
	require.ErrorContains(t, err, "range is full")
	assert.Equal(t, racePorts.Size, b.Ports().Used(), "b learnt the records")

	a.Release(held[3])
	svc := nodePortService("after-release")
	txn, err := b.Allocate(ctx, svc, false)
	require.NoError(t, err, "b refreshed its full hints from the records")
	txn.Commit()
	assert.Equal(t, held[3].Spec.Ports[0].NodePort, svc.Spec.Ports[0].NodePort)
}

// TestSharedRepair: a crash between the claim and the Service write leaves
// an orphan record, which Repair deletes after LeakThreshold runs; a
// stored Service whose record is missing gets it back.
func TestSharedRepair(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	svcs := &services{}
	crashed := sharedAllocator(t, st, svcs)
	lost := nodePortService("lost")
	_, err := crashed.Allocate(ctx, lost, false) // the API server dies before storing it
	require.NoError(t, err)
	kept := nodePortService("kept")
	txn, err := crashed.Allocate(ctx, kept, false)
	require.NoError(t, err)
	txn.Commit()
	svcs.put(kept)

	lostIP := netip.MustParseAddr(lost.Spec.ClusterIP)
	lostPort := int(lost.Spec.Ports[0].NodePort)
	keptIP := netip.MustParseAddr(kept.Spec.ClusterIP)
	// Someone deletes kept's IPAddress.
	_, err = st.Delete(ctx, storage.Key(servicealloc.IPAddressesResource, "", keptIP.String()), nil)
	require.NoError(t, err)

	survivor := sharedAllocator(t, st, svcs)
	for i := 1; i <= servicealloc.LeakThreshold; i++ {
		rep, err := survivor.Repair(ctx)
		require.NoError(t, err)
		if i == 1 {
			assert.Empty(t, rep.AddedIPs, "Sync ran and put the record back")
			continue
		}
		if i < servicealloc.LeakThreshold {
			assert.Empty(t, rep.ReleasedIPs, "repair %d", i)
			continue
		}
		assert.Equal(t, []netip.Addr{lostIP}, rep.ReleasedIPs)
		assert.Equal(t, []int{lostPort}, rep.ReleasedPorts)
	}
	obj, err := st.Get(ctx, storage.Key(servicealloc.IPAddressesResource, "", keptIP.String()))
	require.NoError(t, err, "kept's record is back")
	ref := obj.(*networkingv1.IPAddress).Spec.ParentRef
	assert.Equal(t, types.NamespacedName{Namespace: "default", Name: "kept"}, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
	_, err = st.Get(ctx, storage.Key(servicealloc.IPAddressesResource, "", lostIP.String()))
	require.ErrorIs(t, err, storage.ErrNotFound, "the orphan record is gone")
	_, err = st.Get(ctx, storage.Key(servicealloc.NodePortsResource, "", fmt.Sprint(lostPort)))
	require.ErrorIs(t, err, storage.ErrNotFound)

	// The leaked values can be asked for again.
	again := nodePortService("again")
	again.Spec.ClusterIP, again.Spec.ClusterIPs = lostIP.String(), []string{lostIP.String()}
	again.Spec.Ports[0].NodePort = int32(lostPort)
	txn, err = survivor.Allocate(ctx, again, false)
	require.NoError(t, err)
	txn.Commit()
}
