package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/internal/testutil"
)

// benchProxier returns a Proxier programming a throwaway namespace.
func benchProxier(b *testing.B, client *fake.Clientset) *Proxier {
	b.Helper()
	testutil.RequireRoot(b)
	ns, err := netns.New(b.TempDir(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ns.Remove() })
	p, err := New(Config{Client: client, NodeName: "n1", NetNS: ns.Path(), Table: "podkit_bench",
		ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), SyncPeriod: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchObjects returns n Services with eps ready endpoints each.
func benchObjects(n, eps int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	var svcs []*corev1.Service
	var sls []*discoveryv1.EndpointSlice
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip := netip.AddrFrom4([4]byte{10, 96, byte(i / 250), byte(1 + i%250)}).String()
		svcs = append(svcs, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
		})
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for j := range eps {
			k := i*eps + j
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{netip.AddrFrom4([4]byte{10, 244, byte(k / 250), byte(1 + k%250)}).String()},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
				NodeName:   ptr.To("n1"),
			})
		}
		sls = append(sls, s)
	}
	return svcs, sls
}

func (p *Proxier) load(svcs []*corev1.Service, sls []*discoveryv1.EndpointSlice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range svcs {
		p.setServiceLocked(s)
	}
	for _, s := range sls {
		p.setSliceLocked(nil, s)
	}
}

// BenchmarkFullSync measures a full sync (one transaction rewriting every
// chain, map and set) of 1,000 Services × 10 endpoints.
func BenchmarkFullSync(b *testing.B) {
	p := benchProxier(b, fake.NewClientset())
	p.load(benchObjects(1000, 10))
	ctx := context.Background()
	if err := p.sync(ctx, true); err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime(b)
	for b.Loop() {
		if err := p.sync(ctx, true); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// cpuTimer reports the process CPU time (user and system: the kernel
// applies a transaction in the sending thread) per iteration, which a
// shared machine's load does not inflate the way it does wall time.
type cpuTimer struct{ start time.Duration }

func cpuTime(b *testing.B) cpuTimer { return cpuTimer{start: rusage(b)} }

func (c cpuTimer) report(b *testing.B) {
	b.ReportMetric(float64((rusage(b)-c.start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func rusage(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIncrementalSync measures the sync of one Service's endpoint
// change among 1,000 Services × 10 endpoints.
func BenchmarkIncrementalSync(b *testing.B) {
	p := benchProxier(b, fake.NewClientset())
	svcs, sls := benchObjects(1000, 10)
	p.load(svcs, sls)
	ctx := context.Background()
	if err := p.sync(ctx, true); err != nil {
		b.Fatal(err)
	}
	i := 0
	cpu := cpuTime(b)
	for b.Loop() {
		old := sls[i%len(sls)]
		cur := old.DeepCopy()
		cur.Endpoints[0].Conditions.Ready = ptr.To(!*old.Endpoints[0].Conditions.Ready)
		sls[i%len(sls)] = cur
		p.mu.Lock()
		p.setSliceLocked(old, cur)
		p.mu.Unlock()
		if err := p.sync(ctx, false); err != nil {
			b.Fatal(err)
		}
		i++
	}
	cpu.report(b)
}

// BenchmarkEndpointReadyToProgrammed measures, with Run on informers and
// 1,000 Services × 10 endpoints, the latency from an EndpointSlice update
// marking an endpoint ready (or not) to the end of the transaction that
// programs it, and reports its percentiles.
func BenchmarkEndpointReadyToProgrammed(b *testing.B) {
	client := fake.NewClientset()
	p := benchProxier(b, client)
	svcs, sls := benchObjects(1000, 10)
	ctx, cancel := context.WithCancel(context.Background())
	for _, s := range svcs {
		if _, err := client.CoreV1().Services(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range sls {
		if _, err := client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	programmed := make(chan types.NamespacedName, 4096)
	ready := make(chan struct{}, 1)
	p.synced = func(full bool, changed []types.NamespacedName) {
		if full {
			select {
			case ready <- struct{}{}:
			default:
			}
			return
		}
		for _, n := range changed {
			select {
			case programmed <- n:
			default:
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	<-ready
	var lat []time.Duration
	i := 0
	for b.Loop() {
		s := sls[i%len(sls)]
		s.Endpoints[0].Conditions.Ready = ptr.To(!*s.Endpoints[0].Conditions.Ready)
		want := types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
		start := time.Now()
		if _, err := client.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		for n := range programmed {
			if n == want {
				break
			}
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
