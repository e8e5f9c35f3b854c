package apiserver_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// TestServiceAllocationTwoServers: two API servers on one store, each with
// its own allocator, create Services concurrently — more than the node
// port range holds: no cluster IP or node port is handed out twice, and
// each allocated value has its record (an IPAddress per cluster IP), which
// a delete through either server removes.
func TestServiceAllocationTwoServers(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	ranges := func(c *apiserver.Config) {
		c.ServiceClusterIPRange = netip.MustParsePrefix("10.0.0.0/26") // 62 addresses
		c.ServiceNodePortRange.Base, c.ServiceNodePortRange.Size = 30000, 40
		c.Validator = nil
	}
	servers := []*svcServer{newSvcServer(t, st, ranges), newSvcServer(t, st, ranges)}
	const perServer = 30
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		out  []*corev1.Service
		full int
	)
	for i, s := range servers {
		for j := 0; j < perServer; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc, err := s.create(t, service(fmt.Sprintf("svc-%d-%d", i, j), corev1.ServiceTypeNodePort, ""))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					assert.ErrorContains(t, err, "range is full")
					full++
					return
				}
				out = append(out, svc)
			}()
		}
	}
	wg.Wait()
	require.Len(t, out, 40, "the node port range holds 40")
	assert.Equal(t, 2*perServer-40, full)
	ips, ports := map[string]string{}, map[int32]string{}
	for _, svc := range out {
		ip, p := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
		require.Empty(t, ips[ip], "%s given to %s and %s", ip, ips[ip], svc.Name)
		require.Empty(t, ports[p], "node port %d given to %s and %s", p, ports[p], svc.Name)
		ips[ip], ports[p] = svc.Name, svc.Name

		obj, err := st.Get(t.Context(), storage.Key(servicealloc.IPAddressesResource, "", ip))
		require.NoError(t, err, "the IPAddress of %s", ip)
		ref := obj.(*networkingv1.IPAddress).Spec.ParentRef
		assert.Equal(t, svc.Name, ref.Name)
		_, err = st.Get(t.Context(), storage.Key(servicealloc.NodePortsResource, "", fmt.Sprint(p)))
		require.NoError(t, err, "the record of node port %d", p)
	}

	// Deleting through the other server releases the records, and the
	// value can be taken at once through the first.
	victim := out[0]
	other := servers[1]
	if victim.Name[4] == '1' {
		other = servers[0]
	}
	require.NoError(t, other.client.CoreV1().Services("default").Delete(t.Context(), victim.Name, metav1.DeleteOptions{}))
	_, err := st.Get(t.Context(), storage.Key(servicealloc.IPAddressesResource, "", victim.Spec.ClusterIP))
	require.ErrorIs(t, err, storage.ErrNotFound)
	for _, s := range servers {
		_, err := s.create(t, service("reuse-"+fmt.Sprint(s == other), corev1.ServiceTypeNodePort, victim.Spec.ClusterIP, victim.Spec.Ports[0].NodePort))
		if err == nil {
			return
		}
		assert.ErrorContains(t, err, "already allocated")
	}
	t.Fatal("the released cluster IP and node port could not be taken again")
}

// TestServiceAllocationRepairAcrossServers: a server that claimed a value
// and died before storing its Service leaves an orphan record; the other
// server's repair deletes it.
func TestServiceAllocationRepairAcrossServers(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	a := newSvcServer(t, st)
	b := newSvcServer(t, st)
	orphan := service("never-stored", corev1.ServiceTypeClusterIP, "10.96.5.5")
	orphan.Namespace = "default"
	_, err := a.srv.ServiceAllocator().Allocate(ctx, orphan, false) // a "crashes" here
	require.NoError(t, err)
	_, err = b.create(t, service("squatter", corev1.ServiceTypeClusterIP, "10.96.5.5"))
	assert.ErrorContains(t, err, "provided IP is already allocated")

	for i := 0; i < servicealloc.LeakThreshold; i++ {
		_, err := b.srv.ServiceAllocator().Repair(ctx)
		require.NoError(t, err)
	}
	_, err = st.Get(ctx, storage.Key(servicealloc.IPAddressesResource, "", "10.96.5.5"))
	require.ErrorIs(t, err, storage.ErrNotFound)
	b.mustCreate(t, service("squatter", corev1.ServiceTypeClusterIP, "10.96.5.5"))
}
