package endpointslice

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testService(name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("svc-" + name), Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name}, ClusterIP: "10.96.0.50",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Ports: ports,
		},
	}
}

func svcPort(name string, port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}
}

type podOpt func(*corev1.Pod)

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}
func withPort(name string, n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: name, ContainerPort: n, Protocol: corev1.ProtocolTCP})
	}
}

func testPod(i int, opts ...podOpt) *corev1.Pod {
	ip := fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("pod-%d", i))},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pods(n int, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, testPod(i, opts...))
	}
	return out
}

func noZone(string) string { return "" }

// materialize turns planned creations into existing slices, as the API
// server would store them.
func materialize(t *testing.T, p plan) []*discoveryv1.EndpointSlice {
	t.Helper()
	var out []*discoveryv1.EndpointSlice
	for i, es := range p.create {
		es = es.DeepCopy()
		es.Name = fmt.Sprintf("%s%05d", es.GenerateName, i)
		es.UID = types.UID(es.Name)
		out = append(out, es)
	}
	return out
}

func TestPlanPacksAndIsStable(t *testing.T) {
	svc := testService("web", svcPort("http", 80, intstr.FromInt32(8080)))
	all := pods(250)
	p := planSlices(svc, desiredGroups(svc, all, noZone), nil, 100, time.Time{})
	require.Len(t, p.create, 3)
	assert.Empty(t, p.update)
	assert.Empty(t, p.del)
	sizes := []int{}
	for _, es := range p.create {
		sizes = append(sizes, len(es.Endpoints))
		assert.Equal(t, "web-", es.GenerateName)
		assert.Equal(t, discoveryv1.AddressTypeIPv4, es.AddressType)
		assert.Equal(t, map[string]string{"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy}, es.Labels)
		require.Len(t, es.OwnerReferences, 1)
		assert.Equal(t, svc.UID, es.OwnerReferences[0].UID)
		assert.True(t, *es.OwnerReferences[0].Controller)
		require.Len(t, es.Ports, 1)
		assert.Equal(t, int32(8080), *es.Ports[0].Port)
	}
	assert.Equal(t, []int{100, 100, 50}, sizes)

	existing := materialize(t, p)
	p = planSlices(svc, desiredGroups(svc, all, noZone), existing, 100, time.Time{})
	assert.True(t, p.empty(), "nothing changed, nothing written: %+v", p)

	// One pod turns unready: only its slice is rewritten.
	changed := pods(250)
	notReady(changed[120])
	p = planSlices(svc, desiredGroups(svc, changed, noZone), existing, 100, time.Time{})
	require.Len(t, p.update, 1)
	assert.Empty(t, p.create)
	assert.Empty(t, p.del)
	assert.Len(t, p.update[0].Endpoints, 100)

	// A new pod fills the slice with room instead of a new slice.
	more := append(pods(250), testPod(250))
	p = planSlices(svc, desiredGroups(svc, more, noZone), existing, 100, time.Time{})
	require.Len(t, p.update, 1)
	assert.Len(t, p.update[0].Endpoints, 51)
	assert.Empty(t, p.create)
}

func TestPlanConditions(t *testing.T) {
	svc := testService("web", svcPort("http", 80, intstr.FromInt32(8080)))
	list := []*corev1.Pod{testPod(0), testPod(1, notReady), testPod(2, terminating), testPod(3, notReady, terminating)}
	failed := testPod(4)
	failed.Status.Phase = corev1.PodFailed
	noIP := testPod(5)
	noIP.Status.PodIP, noIP.Status.PodIPs = "", nil
	list = append(list, failed, noIP)
	p := planSlices(svc, desiredGroups(svc, list, noZone), nil, 100, time.Time{})
	require.Len(t, p.create, 1)
	got := map[string][3]bool{}
	for _, ep := range p.create[0].Endpoints {
		got[ep.TargetRef.Name] = [3]bool{*ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating}
	}
	assert.Equal(t, map[string][3]bool{
		"p0": {true, true, false},
		"p1": {false, false, false},
		"p2": {false, true, true},
		"p3": {false, false, true},
	}, got)

	svc.Spec.PublishNotReadyAddresses = true
	p = planSlices(svc, desiredGroups(svc, list, noZone), nil, 100, time.Time{})
	for _, ep := range p.create[0].Endpoints {
		assert.True(t, *ep.Conditions.Ready, ep.TargetRef.Name)
	}
}

func TestPlanNamedPorts(t *testing.T) {
	svc := testService("web", svcPort("http", 80, intstr.FromString("web")), svcPort("metrics", 9090, intstr.FromInt32(0)))
	list := []*corev1.Pod{testPod(0, withPort("web", 8080)), testPod(1), testPod(2, withPort("web", 8081))}
	p := planSlices(svc, desiredGroups(svc, list, noZone), nil, 100, time.Time{})
	require.Len(t, p.create, 3, "pods resolve three different port sets")
	byPod := map[string]string{}
	for _, es := range p.create {
		for _, ep := range es.Endpoints {
			byPod[ep.TargetRef.Name] = portsKey(es.Ports)
		}
	}
	assert.Equal(t, "http/TCP/8080/-,metrics/TCP/9090/-", byPod["p0"])
	assert.Equal(t, "metrics/TCP/9090/-", byPod["p1"], "a pod without the named port lacks it")
	assert.Equal(t, "http/TCP/8081/-,metrics/TCP/9090/-", byPod["p2"])
}

func TestPlanPlaceholderAndCleanup(t *testing.T) {
	svc := testService("web", svcPort("http", 80, intstr.FromInt32(8080)))
	p := planSlices(svc, desiredGroups(svc, nil, noZone), nil, 100, time.Time{})
	require.Len(t, p.create, 1)
	ph := p.create[0]
	assert.Empty(t, ph.Endpoints)
	assert.Empty(t, ph.Ports)

	existing := materialize(t, p)
	p = planSlices(svc, desiredGroups(svc, nil, noZone), existing, 100, time.Time{})
	assert.True(t, p.empty(), "the placeholder is kept")

	// Endpoints arrive: a real slice is created, the placeholder deleted.
	p = planSlices(svc, desiredGroups(svc, pods(2), noZone), existing, 100, time.Time{})
	require.Len(t, p.create, 1)
	require.Len(t, p.del, 1)
	assert.Equal(t, existing[0].Name, p.del[0].Name)

	// Slices of a former Service of the same name are deleted.
	foreign := existing[0].DeepCopy()
	foreign.Name, foreign.UID = "web-old", "old"
	foreign.OwnerReferences[0].UID = "svc-previous"
	p = planSlices(svc, desiredGroups(svc, nil, noZone), append(existing, foreign), 100, time.Time{})
	require.Len(t, p.del, 1)
	assert.Equal(t, "web-old", p.del[0].Name)

	// Dual-stack without endpoints: one placeholder per family.
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	p = planSlices(svc, desiredGroups(svc, nil, noZone), nil, 100, time.Time{})
	require.Len(t, p.create, 2)
	assert.Equal(t, discoveryv1.AddressTypeIPv6, p.create[1].AddressType)
}

func TestPlanDualStackAndHostname(t *testing.T) {
	svc := testService("db", svcPort("pg", 5432, intstr.FromInt32(5432)))
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	pod := testPod(0)
	pod.Spec.Hostname, pod.Spec.Subdomain = "db-0", "db"
	pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: "fd00::1"})
	p := planSlices(svc, desiredGroups(svc, []*corev1.Pod{pod}, func(string) string { return "zone-a" }), nil, 100, time.Time{})
	require.Len(t, p.create, 2)
	for _, es := range p.create {
		require.Len(t, es.Endpoints, 1)
		ep := es.Endpoints[0]
		assert.Equal(t, "db-0", *ep.Hostname)
		assert.Equal(t, "n1", *ep.NodeName)
		assert.Equal(t, "zone-a", *ep.Zone)
		assert.Contains(t, es.Labels, corev1.IsHeadlessService)
		if es.AddressType == discoveryv1.AddressTypeIPv6 {
			assert.Equal(t, []string{"fd00::1"}, ep.Addresses)
		} else {
			assert.Equal(t, []string{"10.244.0.1"}, ep.Addresses)
		}
	}
}

func TestPlanTrigger(t *testing.T) {
	svc := testService("web")
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	p := planSlices(svc, desiredGroups(svc, pods(1), noZone), nil, 100, at)
	require.Len(t, p.create, 1)
	assert.Equal(t, "2025-01-02T03:04:05.000000006Z", p.create[0].Annotations[corev1.EndpointsLastChangeTriggerTime])
}

func TestFindPort(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}},
		InitContainers: []corev1.Container{
			{Ports: []corev1.ContainerPort{{Name: "init", ContainerPort: 1}}},
			{RestartPolicy: &sidecar, Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}},
		},
	}}
	tests := []struct {
		name  string
		port  corev1.ServicePort
		want  int32
		noErr bool
	}{
		{"number", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9376)}, 9376, true},
		{"unset means the port", corev1.ServicePort{Port: 80}, 80, true},
		{"named", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"named needs the protocol", corev1.ServicePort{Port: 53, TargetPort: intstr.FromString("dns")}, 0, false},
		{"named udp", corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, 53, true},
		{"sidecar", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("proxy")}, 15001, true},
		{"plain init container", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("init")}, 0, false},
		{"missing", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("nope")}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findPort(pod, &tt.port)
			if !tt.noErr {
				assert.ErrorIs(t, err, ErrNoPort)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAddressTypes(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	tests := []struct {
		spec corev1.ServiceSpec
		want []discoveryv1.AddressType
	}{
		{corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}}, []discoveryv1.AddressType{v6, v4}},
		{corev1.ServiceSpec{ClusterIP: "10.96.0.1"}, []discoveryv1.AddressType{v4}},
		{corev1.ServiceSpec{ClusterIP: "fd00::1"}, []discoveryv1.AddressType{v6}},
		{corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}, []discoveryv1.AddressType{v4, v6}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, addressTypes(&corev1.Service{Spec: tt.spec}), "%+v", tt.spec)
	}
}
