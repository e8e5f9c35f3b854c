package dns_test

import (
	"context"
	"testing"

	mdns "github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rcodeIs(rc int) func(*mdns.Msg) bool {
	return func(m *mdns.Msg) bool { return m.Rcode == rc }
}

func answerIs(want ...string) func(*mdns.Msg) bool {
	return func(m *mdns.Msg) bool {
		got := rdata(m.Answer)
		if len(got) != len(want) {
			return false
		}
		seen := map[string]int{}
		for _, g := range got {
			seen[g]++
		}
		for _, w := range want {
			if seen[w] == 0 {
				return false
			}
			seen[w]--
		}
		return true
	}
}

// TestInformerUpdates: creations, changes and deletions of Services and
// EndpointSlices show up in answers as their watch events arrive.
func TestInformerUpdates(t *testing.T) {
	e := start(t, nil)
	ctx := context.Background()
	const name = "late.default.svc.cluster.local."
	require.Equal(t, mdns.RcodeNameError, e.query(t, name, mdns.TypeA).Rcode)

	svcs := e.cs.CoreV1().Services("default")
	_, err := svcs.Create(ctx, service("default", "late", "10.96.0.40", port("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{})
	require.NoError(t, err)
	e.eventually(t, name, mdns.TypeA, answerIs("10.96.0.40"))
	e.eventually(t, "40.0.96.10.in-addr.arpa.", mdns.TypePTR, answerIs(name))

	// The namespace now exists for NODATA purposes.
	require.Equal(t, mdns.RcodeSuccess, e.query(t, "default.svc.cluster.local.", mdns.TypeA).Rcode)

	_, err = svcs.Update(ctx, service("default", "late", "10.96.0.41", port("web", corev1.ProtocolTCP, 8080)), metav1.UpdateOptions{})
	require.NoError(t, err)
	e.eventually(t, name, mdns.TypeA, answerIs("10.96.0.41"))
	e.eventually(t, "_web._tcp."+name, mdns.TypeSRV, answerIs("0 100 8080 "+name))
	e.eventually(t, "_http._tcp."+name, mdns.TypeSRV, rcodeIs(mdns.RcodeNameError))
	e.eventually(t, "40.0.96.10.in-addr.arpa.", mdns.TypePTR, rcodeIs(mdns.RcodeRefused))

	require.NoError(t, svcs.Delete(ctx, "late", metav1.DeleteOptions{}))
	e.eventually(t, name, mdns.TypeA, rcodeIs(mdns.RcodeNameError))
	e.eventually(t, "default.svc.cluster.local.", mdns.TypeA, rcodeIs(mdns.RcodeNameError))
}

// TestHeadlessEndpointChanges: a headless Service follows its slices — an
// endpoint turning ready, unready, a second slice, a slice deleted.
func TestHeadlessEndpointChanges(t *testing.T) {
	e := start(t, nil, service("default", "hl", corev1.ClusterIPNone, port("p", corev1.ProtocolTCP, 80)))
	ctx := context.Background()
	const name = "hl.default.svc.cluster.local."
	ports := []discoveryv1.EndpointPort{slicePort("p", corev1.ProtocolTCP, 8080)}
	slices := e.cs.DiscoveryV1().EndpointSlices("default")

	_, err := slices.Create(ctx, slice("default", "hl", "hl-1", discoveryv1.AddressTypeIPv4, ports,
		ep{ip: "10.244.2.1", host: "a", ready: true}, ep{ip: "10.244.2.2", host: "b", ready: false}), metav1.CreateOptions{})
	require.NoError(t, err)
	e.eventually(t, name, mdns.TypeA, answerIs("10.244.2.1"))
	e.eventually(t, "b."+name, mdns.TypeA, rcodeIs(mdns.RcodeNameError))

	_, err = slices.Update(ctx, slice("default", "hl", "hl-1", discoveryv1.AddressTypeIPv4, ports,
		ep{ip: "10.244.2.1", host: "a", ready: false}, ep{ip: "10.244.2.2", host: "b", ready: true}), metav1.UpdateOptions{})
	require.NoError(t, err)
	e.eventually(t, name, mdns.TypeA, answerIs("10.244.2.2"))
	e.eventually(t, "b."+name, mdns.TypeA, answerIs("10.244.2.2"))
	e.eventually(t, "_p._tcp."+name, mdns.TypeSRV, answerIs("0 100 8080 b."+name))

	_, err = slices.Create(ctx, slice("default", "hl", "hl-2", discoveryv1.AddressTypeIPv6, ports,
		ep{ip: "fd00::2:3", host: "c", ready: true}), metav1.CreateOptions{})
	require.NoError(t, err)
	e.eventually(t, name, mdns.TypeAAAA, answerIs("fd00::2:3"))
	e.eventually(t, "c."+name, mdns.TypeAAAA, answerIs("fd00::2:3"))

	require.NoError(t, slices.Delete(ctx, "hl-1", metav1.DeleteOptions{}))
	e.eventually(t, name, mdns.TypeA, func(m *mdns.Msg) bool { return m.Rcode == mdns.RcodeSuccess && len(m.Answer) == 0 })
	require.NoError(t, slices.Delete(ctx, "hl-2", metav1.DeleteOptions{}))
	e.eventually(t, name, mdns.TypeA, rcodeIs(mdns.RcodeNameError))
}

// TestPublishNotReady: a Service publishing not-ready addresses answers
// with every endpoint.
func TestPublishNotReady(t *testing.T) {
	svc := service("default", "peers", corev1.ClusterIPNone)
	svc.Spec.PublishNotReadyAddresses = true
	e := start(t, nil, svc, slice("default", "peers", "peers-1", discoveryv1.AddressTypeIPv4, nil,
		ep{ip: "10.244.3.1", ready: false}, ep{ip: "10.244.3.2", ready: true}))
	require.ElementsMatch(t, []string{"10.244.3.1", "10.244.3.2"}, rdata(e.query(t, "peers.default.svc.cluster.local.", mdns.TypeA).Answer))
}
