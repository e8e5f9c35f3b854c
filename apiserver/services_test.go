package apiserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// svcServer is an API server with the reference configuration (defaulting
// included) over st, served by httptest; the store stays open for the
// caller to reuse.
type svcServer struct {
	srv    *apiserver.Server
	client *kubernetes.Clientset
	close  func()
}

func newSvcServer(t *testing.T, st storage.Store, mutate ...func(*apiserver.Config)) *svcServer {
	t.Helper()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	for _, m := range mutate {
		m(cfg)
	}
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	client, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	require.NoError(t, err)
	var once sync.Once
	closeFn := func() { once.Do(func() { hs.CloseClientConnections(); hs.Close() }) }
	t.Cleanup(closeFn)
	return &svcServer{srv: srv, client: client, close: closeFn}
}

func newMemorySvcServer(t *testing.T, mutate ...func(*apiserver.Config)) *svcServer {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	return newSvcServer(t, st, mutate...)
}

func service(name string, typ corev1.ServiceType, clusterIP string, nodePorts ...int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type: typ, ClusterIP: clusterIP, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	for i, p := range nodePorts {
		s.Spec.Ports[i].NodePort = p
	}
	if typ == corev1.ServiceTypeExternalName {
		s.Spec.ExternalName, s.Spec.Selector = "example.com", nil
	}
	return s
}

func (s *svcServer) create(t *testing.T, svc *corev1.Service, opts ...metav1.CreateOptions) (*corev1.Service, error) {
	t.Helper()
	o := metav1.CreateOptions{}
	if len(opts) > 0 {
		o = opts[0]
	}
	return s.client.CoreV1().Services("default").Create(t.Context(), svc, o)
}

func (s *svcServer) mustCreate(t *testing.T, svc *corev1.Service) *corev1.Service {
	t.Helper()
	out, err := s.create(t, svc)
	require.NoError(t, err)
	return out
}

// requireInvalid checks a 422 and its exact message.
func requireInvalid(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	assert.Equal(t, msg, err.Error())
}

var serviceRange = netip.MustParsePrefix("10.96.0.0/12")

func TestServiceClusterIPAllocation(t *testing.T) {
	s := newMemorySvcServer(t)

	web := s.mustCreate(t, service("web", corev1.ServiceTypeClusterIP, ""))
	ip := netip.MustParseAddr(web.Spec.ClusterIP)
	assert.True(t, serviceRange.Contains(ip), "%s outside 10.96.0.0/12", ip)
	assert.False(t, ip.Less(netip.MustParseAddr("10.96.1.1")), "dynamic allocation prefers the upper band, got %s", ip)
	assert.Equal(t, []string{web.Spec.ClusterIP}, web.Spec.ClusterIPs)
	assert.Equal(t, []corev1.IPFamily{corev1.IPv4Protocol}, web.Spec.IPFamilies)
	require.NotNil(t, web.Spec.IPFamilyPolicy)
	assert.Equal(t, corev1.IPFamilyPolicySingleStack, *web.Spec.IPFamilyPolicy)
	got, err := s.client.CoreV1().Services("default").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, web.Spec.ClusterIPs, got.Spec.ClusterIPs, "the allocation is stored")

	dns := s.mustCreate(t, service("kube-dns", corev1.ServiceTypeClusterIP, "10.96.0.10"))
	assert.Equal(t, "10.96.0.10", dns.Spec.ClusterIP, "an explicit IP of the static band is honoured")

	_, err = s.create(t, service("out", corev1.ServiceTypeClusterIP, "10.0.0.1"))
	requireInvalid(t, err, `Service "out" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12`)
	status := err.(apierrors.APIStatus).Status()
	require.NotNil(t, status.Details)
	require.Len(t, status.Details.Causes, 1)
	assert.Equal(t, "spec.clusterIPs", status.Details.Causes[0].Field)

	_, err = s.create(t, service("dup", corev1.ServiceTypeClusterIP, "10.96.0.10"))
	requireInvalid(t, err, `Service "dup" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: provided IP is already allocated`)

	headless := s.mustCreate(t, service("db", corev1.ServiceTypeClusterIP, corev1.ClusterIPNone))
	assert.Equal(t, []string{"None"}, headless.Spec.ClusterIPs)
	ext := s.mustCreate(t, service("cname", corev1.ServiceTypeExternalName, ""))
	assert.Empty(t, ext.Spec.ClusterIPs)
	assert.Equal(t, 2, s.srv.ServiceAllocator().IPs().Used(), "web and kube-dns; headless and ExternalName hold nothing")

	// Dry run: a plausible IP, nothing reserved.
	dry, err := s.create(t, service("dry", corev1.ServiceTypeClusterIP, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	assert.True(t, serviceRange.Contains(netip.MustParseAddr(dry.Spec.ClusterIP)))
	assert.Equal(t, 2, s.srv.ServiceAllocator().IPs().Used())
	s.mustCreate(t, service("after-dry", corev1.ServiceTypeClusterIP, dry.Spec.ClusterIP))
	_, err = s.create(t, service("dry2", corev1.ServiceTypeClusterIP, "10.96.0.10"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	assert.ErrorContains(t, err, "provided IP is already allocated", "a dry run checks requested IPs")

	// Delete releases.
	require.NoError(t, s.client.CoreV1().Services("default").Delete(t.Context(), "kube-dns", metav1.DeleteOptions{}))
	s.mustCreate(t, service("kube-dns", corev1.ServiceTypeClusterIP, "10.96.0.10"))

	// A rejected create (a bad port) holds nothing.
	bad := service("badport", corev1.ServiceTypeClusterIP, "10.96.0.11")
	bad.Spec.Ports[0].Port = 0
	_, err = s.create(t, bad)
	require.True(t, apierrors.IsInvalid(err))
	s.mustCreate(t, service("goodport", corev1.ServiceTypeClusterIP, "10.96.0.11"))
}

func TestServiceUpdateAllocations(t *testing.T) {
	s := newMemorySvcServer(t)
	svcs := s.client.CoreV1().Services("default")
	ctx := t.Context()

	web := s.mustCreate(t, service("web", corev1.ServiceTypeClusterIP, "10.96.0.20"))

	// The cluster IP is immutable.
	changed := web.DeepCopy()
	changed.Spec.ClusterIP, changed.Spec.ClusterIPs = "10.96.0.21", []string{"10.96.0.21"}
	_, err := svcs.Update(ctx, changed, metav1.UpdateOptions{})
	requireInvalid(t, err, `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.21"]: may not change once set`)

	// Resending the manifest without the allocated values keeps them
	// (kubectl replace / apply).
	resent := service("web", corev1.ServiceTypeClusterIP, "")
	resent.Labels = map[string]string{"v": "2"}
	out, err := svcs.Update(ctx, resent, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "10.96.0.20", out.Spec.ClusterIP)
	assert.Equal(t, []corev1.IPFamily{corev1.IPv4Protocol}, out.Spec.IPFamilies)

	// ClusterIP → ExternalName releases the IP; back allocates a new one.
	out, err = svcs.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"type":"ExternalName","externalName":"example.com"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Empty(t, out.Spec.ClusterIP)
	assert.Empty(t, out.Spec.ClusterIPs)
	assert.Nil(t, out.Spec.IPFamilyPolicy)
	assert.False(t, s.srv.ServiceAllocator().IPs().Has(netip.MustParseAddr("10.96.0.20")))
	s.mustCreate(t, service("takes-it", corev1.ServiceTypeClusterIP, "10.96.0.20"))
	out, err = svcs.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP","externalName":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.True(t, serviceRange.Contains(netip.MustParseAddr(out.Spec.ClusterIP)))
	assert.NotEqual(t, "10.96.0.20", out.Spec.ClusterIP)
	assert.True(t, s.srv.ServiceAllocator().IPs().Has(netip.MustParseAddr(out.Spec.ClusterIP)))

	// A dry-run type change releases nothing.
	_, err = svcs.Patch(ctx, "takes-it", types.MergePatchType, []byte(`{"spec":{"type":"ExternalName","externalName":"example.com"}}`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	assert.True(t, s.srv.ServiceAllocator().IPs().Has(netip.MustParseAddr("10.96.0.20")))
}

func TestServiceNodePorts(t *testing.T) {
	s := newMemorySvcServer(t)
	svcs := s.client.CoreV1().Services("default")
	ctx := t.Context()

	np := s.mustCreate(t, service("np", corev1.ServiceTypeNodePort, ""))
	port := np.Spec.Ports[0].NodePort
	assert.GreaterOrEqual(t, port, int32(30086), "dynamic node ports prefer the upper band")
	assert.LessOrEqual(t, port, int32(32767))

	fixed := s.mustCreate(t, service("fixed", corev1.ServiceTypeNodePort, "", 30080))
	assert.Equal(t, int32(30080), fixed.Spec.Ports[0].NodePort)

	_, err := s.create(t, service("dup", corev1.ServiceTypeNodePort, "", 30080))
	requireInvalid(t, err, `Service "dup" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`)
	_, err = s.create(t, service("low", corev1.ServiceTypeNodePort, "", 8080))
	requireInvalid(t, err, `Service "low" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767`)

	lb := service("lb", corev1.ServiceTypeLoadBalancer, "")
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	lb = s.mustCreate(t, lb)
	assert.NotZero(t, lb.Spec.Ports[0].NodePort)
	assert.NotZero(t, lb.Spec.HealthCheckNodePort)

	// Resending without nodePort keeps it; NodePort → ClusterIP releases it.
	out, err := svcs.Update(ctx, service("fixed", corev1.ServiceTypeNodePort, ""), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(30080), out.Spec.Ports[0].NodePort)
	out, err = svcs.Patch(ctx, "fixed", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Zero(t, out.Spec.Ports[0].NodePort)
	assert.Empty(t, out.Spec.ExternalTrafficPolicy)
	s.mustCreate(t, service("reuse", corev1.ServiceTypeNodePort, "", 30080))

	// Delete releases node ports.
	require.NoError(t, svcs.Delete(ctx, "lb", metav1.DeleteOptions{}))
	assert.False(t, s.srv.ServiceAllocator().Ports().Has(int(lb.Spec.HealthCheckNodePort)))
	assert.False(t, s.srv.ServiceAllocator().Ports().Has(int(lb.Spec.Ports[0].NodePort)))
}

func TestServiceConfiguredRanges(t *testing.T) {
	s := newMemorySvcServer(t, func(c *apiserver.Config) {
		c.ServiceClusterIPRange = netip.MustParsePrefix("172.20.0.0/24")
		c.ServiceNodePortRange.Base, c.ServiceNodePortRange.Size = 31000, 100
		c.Validator = nil // the server's default checks the configured node port range
	})
	web := s.mustCreate(t, service("web", corev1.ServiceTypeNodePort, ""))
	assert.True(t, netip.MustParsePrefix("172.20.0.0/24").Contains(netip.MustParseAddr(web.Spec.ClusterIP)))
	assert.GreaterOrEqual(t, web.Spec.Ports[0].NodePort, int32(31016))
	assert.Less(t, web.Spec.Ports[0].NodePort, int32(31100))
	_, err := s.create(t, service("x", corev1.ServiceTypeClusterIP, "10.96.0.5"))
	assert.ErrorContains(t, err, "The range of valid IPs is 172.20.0.0/24")
	_, err = s.create(t, service("y", corev1.ServiceTypeNodePort, "", 30000))
	assert.ErrorContains(t, err, "The range of valid ports is 31000-31099")
}

// TestServiceConcurrentCreates: 100 creates at once in a /25 (126
// addresses) get 100 distinct cluster IPs and node ports.
func TestServiceConcurrentCreates(t *testing.T) {
	s := newMemorySvcServer(t, func(c *apiserver.Config) {
		c.ServiceClusterIPRange = netip.MustParsePrefix("10.0.0.0/25")
		c.ServiceNodePortRange.Base, c.ServiceNodePortRange.Size = 30000, 128
		c.Validator = nil
	})
	const n = 100
	var wg sync.WaitGroup
	errs := make([]error, n)
	out := make([]*corev1.Service, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.create(t, service(fmt.Sprintf("svc-%d", i), corev1.ServiceTypeNodePort, ""))
		}()
	}
	wg.Wait()
	ips, ports := map[string]string{}, map[int32]string{}
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i])
		ip, p := out[i].Spec.ClusterIP, out[i].Spec.Ports[0].NodePort
		require.Empty(t, ips[ip], "%s given to %s and %s", ip, ips[ip], out[i].Name)
		require.Empty(t, ports[p], "node port %d given to %s and %s", p, ports[p], out[i].Name)
		ips[ip], ports[p] = out[i].Name, out[i].Name
	}
	list, err := s.client.CoreV1().Services("default").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	stored := map[string]bool{}
	for _, svc := range list.Items {
		stored[svc.Spec.ClusterIP] = true
	}
	assert.Len(t, stored, n, "the stored services hold distinct IPs")
	assert.Equal(t, n, s.srv.ServiceAllocator().IPs().Used())
}
