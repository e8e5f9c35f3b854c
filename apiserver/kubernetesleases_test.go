package apiserver_test

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// dyingStore is one API server's connection to the shared store; kill
// makes every read and write fail, as when the server's process dies.
type dyingStore struct {
	storage.Store
	dead atomic.Bool
}

var errDead = errors.New("the API server is dead")

func (d *dyingStore) check() error {
	if d.dead.Load() {
		return errDead
	}
	return nil
}

func (d *dyingStore) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Store.Create(ctx, key, obj)
}

func (d *dyingStore) Get(ctx context.Context, key string) (runtime.Object, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Store.Get(ctx, key)
}

func (d *dyingStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Store.List(ctx, prefix, opts)
}

func (d *dyingStore) Update(ctx context.Context, key string, fn func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Store.Update(ctx, key, fn)
}

func (d *dyingStore) Delete(ctx context.Context, key string, pre func(runtime.Object) error) (runtime.Object, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Store.Delete(ctx, key, pre)
}

// Close leaves the shared store open for the other servers.
func (d *dyingStore) Close() error { return nil }

// fakeClock is the servers' shared clock: leases expire only when the
// test advances it.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) config(cfg *apiserver.Config) { cfg.Clock = c.now }

// runningServer is an API server whose controllers run until stop.
type runningServer struct {
	*svcServer
	store *dyingStore
	stop  func()
}

func startLeaseServer(t *testing.T, shared storage.Store, clock *fakeClock, addr string, port int) *runningServer {
	t.Helper()
	ds := &dyingStore{Store: shared}
	s := newSvcServer(t, ds, clock.config, func(c *apiserver.Config) {
		c.AdvertiseAddress, c.AdvertisePort = netip.MustParseAddr(addr), port
		c.KubernetesServiceInterval = 20 * time.Millisecond
		c.KubernetesServiceLeaseTTL = 5 * time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.srv.RunControllers(ctx) }()
	var once atomic.Bool
	stop := func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return &runningServer{svcServer: s, store: ds, stop: stop}
}

// TestKubernetesEndpointsSeveralServers: three API servers on one store
// (two sharing a port, two sharing an address) all appear in the
// `kubernetes` endpoints and slices; one stopping cleanly leaves at once,
// one dying leaves when its lease expires.
func TestKubernetesEndpointsSeveralServers(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	clock := newFakeClock()
	a := startLeaseServer(t, st, clock, "192.0.2.10", 6443)
	b := startLeaseServer(t, st, clock, "192.0.2.11", 6443)
	c := startLeaseServer(t, st, clock, "192.0.2.10", 7443)
	ctx := t.Context()

	subset := func(port int32, addrs ...string) corev1.EndpointSubset {
		ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}}}
		for _, a := range addrs {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: a})
		}
		return ss
	}
	subsets := func() []corev1.EndpointSubset {
		ep, err := a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return ep.Subsets
	}
	slices := func() map[string][]string { // slice name → "address:port"
		list, err := a.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		require.NoError(t, err)
		out := map[string][]string{}
		for _, es := range list.Items {
			for _, e := range es.Endpoints {
				out[es.Name] = append(out[es.Name], e.Addresses[0]+":"+strconv.Itoa(int(*es.Ports[0].Port)))
			}
		}
		return out
	}
	all := []corev1.EndpointSubset{subset(6443, "192.0.2.10", "192.0.2.11"), subset(7443, "192.0.2.10")}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(all, subsets()) }, 30*time.Second, 10*time.Millisecond,
		"the endpoints never listed all three servers: %v", subsets())
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(map[string][]string{
			"kubernetes":           {"192.0.2.10:6443", "192.0.2.11:6443"},
			"kubernetes-ipv4-7443": {"192.0.2.10:7443"},
		}, slices())
	}, 30*time.Second, 10*time.Millisecond, "slices: %v", slices())
	// The servers agree: the endpoints stay put across reconciles.
	ep, err := a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // ten reconciles of each server
	again, err := a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ep.ResourceVersion, again.ResourceVersion, "the endpoints flipped between servers")
	svc, err := a.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	svcAgain, err := a.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, svc.ResourceVersion, svcAgain.ResourceVersion, "the service's targetPort flipped between servers")

	// c stops cleanly: gone once it has stopped, with the clock frozen.
	c.stop()
	assert.Equal(t, []corev1.EndpointSubset{subset(6443, "192.0.2.10", "192.0.2.11")}, subsets())
	assert.Equal(t, map[string][]string{"kubernetes": {"192.0.2.10:6443", "192.0.2.11:6443"}}, slices())

	// b dies: listed until its lease expires.
	b.store.dead.Store(true)
	b.stop()
	clock.advance(4 * time.Second)
	ep, err = a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	rv := ep.ResourceVersion
	require.Eventually(t, func() bool { // a has reconciled after the advance
		l, err := a.client.CoordinationV1().Leases("kube-system").Get(ctx, "podkit-apiserver-192.0.2.10-6443", metav1.GetOptions{})
		return err == nil && !l.Spec.RenewTime.Time.Before(clock.now())
	}, 30*time.Second, 10*time.Millisecond)
	ep, err = a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rv, ep.ResourceVersion, "b is still live within its TTL")
	assert.Equal(t, []corev1.EndpointSubset{subset(6443, "192.0.2.10", "192.0.2.11")}, ep.Subsets)

	clock.advance(2 * time.Second) // past b's last renewal + TTL
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual([]corev1.EndpointSubset{subset(6443, "192.0.2.10")}, subsets())
	}, 30*time.Second, 10*time.Millisecond, "the dead server stayed: %v", subsets())
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(map[string][]string{"kubernetes": {"192.0.2.10:6443"}}, slices())
	}, 30*time.Second, 10*time.Millisecond, "slices: %v", slices())
	_, err = a.client.CoordinationV1().Leases("kube-system").Get(ctx, "podkit-apiserver-192.0.2.11-6443", metav1.GetOptions{})
	assert.Error(t, err, "the expired lease is deleted")
}

func itoa(p int32) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(p)).String()[len("0.0.0.0:"):]
}
