package apiserver_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkit/podkit/apiserver"
)

func TestKubernetesService(t *testing.T) {
	s := newMemorySvcServer(t, func(c *apiserver.Config) {
		c.AdvertiseAddress = netip.MustParseAddr("192.0.2.10")
		c.AdvertisePort = 6443
		c.KubernetesServiceInterval = time.Hour // only kicks reconcile during the test
	})
	ctx := t.Context()
	core := s.client.CoreV1()

	check := func(t *testing.T) {
		t.Helper()
		svc, err := core.Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
		assert.Equal(t, "10.96.0.1", svc.Spec.ClusterIP)
		assert.Equal(t, []string{"10.96.0.1"}, svc.Spec.ClusterIPs)
		assert.Equal(t, []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(6443)}}, svc.Spec.Ports)
		assert.Equal(t, map[string]string{"component": "apiserver", "provider": "kubernetes"}, svc.Labels)
		assert.Nil(t, svc.Spec.Selector)
		assert.Equal(t, corev1.ServiceAffinityNone, svc.Spec.SessionAffinity)
		assert.Equal(t, []corev1.IPFamily{corev1.IPv4Protocol}, svc.Spec.IPFamilies)
		assert.NotEmpty(t, svc.UID)

		ep, err := core.Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}},
		}}, ep.Subsets)
		assert.Equal(t, "true", ep.Labels[discoveryv1.LabelSkipMirror])

		es, err := s.client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, discoveryv1.AddressTypeIPv4, es.AddressType)
		assert.Equal(t, "kubernetes", es.Labels[discoveryv1.LabelServiceName])
		require.Len(t, es.Endpoints, 1)
		assert.Equal(t, []string{"192.0.2.10"}, es.Endpoints[0].Addresses)
		require.NotNil(t, es.Endpoints[0].Conditions.Ready)
		assert.True(t, *es.Endpoints[0].Conditions.Ready)
		require.Len(t, es.Ports, 1)
		assert.Equal(t, "https", *es.Ports[0].Name)
		assert.Equal(t, int32(6443), *es.Ports[0].Port)
		assert.Equal(t, corev1.ProtocolTCP, *es.Ports[0].Protocol)
	}
	check(t) // made by Bootstrap

	// Idempotent: a second Bootstrap (a restart) changes nothing.
	before, err := core.Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, s.srv.Bootstrap(ctx))
	after, err := core.Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion)

	_, err = s.create(t, service("squatter", corev1.ServiceTypeClusterIP, "10.96.0.1"))
	assert.ErrorContains(t, err, "provided IP is already allocated", "10.96.0.1 is the kubernetes service's")

	// A changed port is put back.
	after.Spec.Ports[0].TargetPort = intstr.FromInt32(8443)
	_, err = core.Services("default").Update(ctx, after, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.srv.ReconcileKubernetesService(ctx))
	check(t)

	// So is a changed type, and the node port it got is given back.
	np, err := core.Services("default").Patch(ctx, "kubernetes", types.MergePatchType, []byte(`{"spec":{"type":"NodePort"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	nodePort := int(np.Spec.Ports[0].NodePort)
	require.NotZero(t, nodePort)
	require.NoError(t, s.srv.ReconcileKubernetesService(ctx))
	check(t)
	assert.False(t, s.srv.ServiceAllocator().Ports().Has(nodePort))

	// Deleted objects come back at once while the controllers run.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.srv.RunControllers(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor := func(what string, get func() error) {
		t.Helper()
		require.Eventually(t, func() bool { return get() == nil }, 30*time.Second, 10*time.Millisecond, "%s was not recreated", what)
	}
	require.NoError(t, core.Services("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}))
	waitFor("the service", func() error {
		_, err := core.Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err
	})
	require.NoError(t, s.client.DiscoveryV1().EndpointSlices("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}))
	waitFor("the endpointslice", func() error {
		_, err := s.client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err
	})
	require.NoError(t, core.Endpoints("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}))
	waitFor("the endpoints", func() error {
		_, err := core.Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err
	})
	check(t)
}

// TestKubernetesServiceNeedsAPort: without a known port (no
// AdvertisePort, no Serve) there is no kubernetes service.
func TestKubernetesServiceNeedsAPort(t *testing.T) {
	s := newMemorySvcServer(t)
	_, err := s.client.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	assert.Equal(t, 0, s.srv.ServiceAllocator().IPs().Used())
}
