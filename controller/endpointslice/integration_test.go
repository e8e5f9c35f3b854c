package endpointslice_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkit/podkit/controller/endpointslice"
)

var httpPort = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}

// TestReadinessAndTermination follows pods through readiness changes and a
// graceful deletion, in the slices and in the Endpoints object.
func TestReadinessAndTermination(t *testing.T) {
	e := newEnv(t)
	svc := e.createService(t, "web", "10.96.0.50", tcpPort("http", 80, intstr.FromString("http")))
	e.createPod(t, podSpec{name: "web-0", app: "web", ip: podIP(0), ready: true, ports: httpPort})
	e.createPod(t, podSpec{name: "web-1", app: "web", ip: podIP(1), ready: false, ports: httpPort})
	e.createPod(t, podSpec{name: "web-2", app: "web", ip: podIP(2), ready: true, ports: httpPort})
	e.createPod(t, podSpec{name: "other", app: "other", ip: podIP(3), ready: true, ports: httpPort})

	expect := func(what string, slices, subsets map[string]string) {
		t.Helper()
		eventually(t, what+" (slices)", func() bool { return mapsEqual(state(e.slicesOf(t, "web")), slices) })
		eventually(t, what+" (endpoints)", func() bool { return mapsEqual(subsetState(e.endpointsOf(t, "web")), subsets) })
	}
	expect("initial",
		map[string]string{"web-0": "RS-", "web-1": "---", "web-2": "RS-"},
		map[string]string{"web-0": "ready", "web-1": "notready", "web-2": "ready"})

	list := e.slicesOf(t, "web")
	require.Len(t, list, 1)
	es := list[0]
	assert.Equal(t, discoveryv1.AddressTypeIPv4, es.AddressType)
	assert.Equal(t, "web", es.Labels[discoveryv1.LabelServiceName])
	assert.Equal(t, endpointslice.ManagedBy, es.Labels[discoveryv1.LabelManagedBy])
	assert.Equal(t, "blue", es.Labels["team"], "the Service's labels are copied")
	assert.NotContains(t, es.Labels, corev1.IsHeadlessService)
	assert.Contains(t, es.Annotations, corev1.EndpointsLastChangeTriggerTime)
	require.Len(t, es.OwnerReferences, 1)
	assert.Equal(t, svc.UID, es.OwnerReferences[0].UID)
	assert.Equal(t, "Service", es.OwnerReferences[0].Kind)
	require.Len(t, es.Ports, 1)
	assert.Equal(t, "http", *es.Ports[0].Name)
	assert.Equal(t, int32(8080), *es.Ports[0].Port, "named targetPort resolved to the container port")
	for _, ep := range es.Endpoints {
		assert.Equal(t, "node-1", *ep.NodeName)
		assert.Equal(t, "Pod", ep.TargetRef.Kind)
		assert.Len(t, ep.Addresses, 1)
	}
	eps := e.endpointsOf(t, "web")
	assert.Equal(t, "blue", eps.Labels["team"])
	assert.Contains(t, eps.Annotations, corev1.EndpointsLastChangeTriggerTime)
	require.Len(t, eps.Subsets, 1)
	assert.Equal(t, []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}, eps.Subsets[0].Ports)

	e.markReady(t, "web-1", true)
	e.markReady(t, "web-0", false)
	expect("readiness flipped",
		map[string]string{"web-0": "---", "web-1": "RS-", "web-2": "RS-"},
		map[string]string{"web-0": "notready", "web-1": "ready", "web-2": "ready"})

	// A graceful deletion keeps the pod (no kubelet finishes it): it is
	// terminating — not ready but still serving — and leaves Endpoints.
	require.NoError(t, e.client.CoreV1().Pods(e.ns).Delete(e.ctx(), "web-2", metav1.DeleteOptions{}))
	expect("terminating",
		map[string]string{"web-0": "---", "web-1": "RS-", "web-2": "-ST"},
		map[string]string{"web-0": "notready", "web-1": "ready"})

	zero := int64(0)
	require.NoError(t, e.client.CoreV1().Pods(e.ns).Delete(e.ctx(), "web-2", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	expect("deleted",
		map[string]string{"web-0": "---", "web-1": "RS-"},
		map[string]string{"web-0": "notready", "web-1": "ready"})

	// Relabelling a pod out of the selector removes it.
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx(), "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	pod.Labels["app"] = "elsewhere"
	_, err = e.client.CoreV1().Pods(e.ns).Update(e.ctx(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	expect("relabelled", map[string]string{"web-0": "---"}, map[string]string{"web-0": "notready"})
}

// TestNamedPorts: a pod without the container port a named targetPort
// names is missing that port — in its own slice, in its own subset.
func TestNamedPorts(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "api", "10.96.0.51",
		tcpPort("http", 80, intstr.FromString("http")), tcpPort("metrics", 9090, intstr.FromInt32(9100)))
	e.createPod(t, podSpec{name: "api-0", app: "api", ip: podIP(10), ready: true, ports: httpPort})
	e.createPod(t, podSpec{name: "api-1", app: "api", ip: podIP(11), ready: true,
		ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}}})
	e.createPod(t, podSpec{name: "api-2", app: "api", ip: podIP(12), ready: true})

	portsOf := func(es discoveryv1.EndpointSlice) map[string]int32 {
		out := map[string]int32{}
		for _, p := range es.Ports {
			out[*p.Name] = *p.Port
		}
		return out
	}
	eventually(t, "three port sets", func() bool { return len(state(e.slicesOf(t, "api"))) == 3 })
	byPod := map[string]map[string]int32{}
	for _, es := range e.slicesOf(t, "api") {
		for _, ep := range es.Endpoints {
			byPod[ep.TargetRef.Name] = portsOf(es)
		}
	}
	assert.Equal(t, map[string]map[string]int32{
		"api-0": {"http": 8080, "metrics": 9100},
		"api-1": {"http": 8443, "metrics": 9100},
		"api-2": {"metrics": 9100},
	}, byPod)

	eventually(t, "endpoints subsets", func() bool { return len(subsetState(e.endpointsOf(t, "api"))) == 3 })
	eps := e.endpointsOf(t, "api")
	require.Len(t, eps.Subsets, 3)
	subsets := map[string]int{}
	for _, ss := range eps.Subsets {
		for _, a := range ss.Addresses {
			subsets[a.TargetRef.Name] = len(ss.Ports)
		}
	}
	assert.Equal(t, map[string]int{"api-0": 2, "api-1": 2, "api-2": 1}, subsets)
}

// TestHeadlessHostnames: StatefulSet-style pods publish their hostname.
func TestHeadlessHostnames(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "db", corev1.ClusterIPNone, tcpPort("pg", 5432, intstr.FromInt32(5432)))
	e.createPod(t, podSpec{name: "db-0", app: "db", ip: podIP(20), ready: true, hostname: "db-0", subdomain: "db"})
	e.createPod(t, podSpec{name: "db-x", app: "db", ip: podIP(21), ready: true, hostname: "db-x", subdomain: "other"})
	eventually(t, "two endpoints", func() bool { return len(state(e.slicesOf(t, "db"))) == 2 })
	hosts := map[string]string{}
	for _, es := range e.slicesOf(t, "db") {
		assert.Contains(t, es.Labels, corev1.IsHeadlessService)
		for _, ep := range es.Endpoints {
			h := ""
			if ep.Hostname != nil {
				h = *ep.Hostname
			}
			hosts[ep.TargetRef.Name] = h
		}
	}
	assert.Equal(t, map[string]string{"db-0": "db-0", "db-x": ""}, hosts, "only a pod whose subdomain is the Service")

	eventually(t, "endpoints", func() bool { return len(subsetState(e.endpointsOf(t, "db"))) == 2 })
	eps := e.endpointsOf(t, "db")
	assert.Contains(t, eps.Labels, corev1.IsHeadlessService)
	for _, a := range eps.Subsets[0].Addresses {
		if a.TargetRef.Name == "db-0" {
			assert.Equal(t, "db-0", a.Hostname)
		}
	}
}

// TestManySlices: 250 ready pods make 3 slices of 100, 100 and 50.
func TestManySlices(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "big", "10.96.0.52", tcpPort("http", 80, intstr.FromInt32(8080)))
	for i := range 250 {
		e.createPod(t, podSpec{name: "big-" + podIP(i)[7:], app: "big", ip: podIP(i), ready: true})
	}
	eventually(t, "250 endpoints", func() bool { return len(state(e.slicesOf(t, "big"))) == 250 })
	var sizes []int
	for _, es := range e.slicesOf(t, "big") {
		sizes = append(sizes, len(es.Endpoints))
	}
	assert.ElementsMatch(t, []int{100, 100, 50}, sizes)
	eventually(t, "endpoints", func() bool { return len(subsetState(e.endpointsOf(t, "big"))) == 250 })
}

// TestServiceDeletion: slices and Endpoints go with their Service.
func TestServiceDeletion(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "gone", "10.96.0.53", tcpPort("http", 80, intstr.FromInt32(8080)))
	e.createPod(t, podSpec{name: "gone-0", app: "gone", ip: podIP(30), ready: true})
	eventually(t, "published", func() bool {
		return len(state(e.slicesOf(t, "gone"))) == 1 && e.endpointsOf(t, "gone") != nil
	})
	require.NoError(t, e.client.CoreV1().Services(e.ns).Delete(e.ctx(), "gone", metav1.DeleteOptions{}))
	eventually(t, "slices deleted", func() bool { return len(e.slicesOf(t, "gone")) == 0 })
	eventually(t, "endpoints deleted", func() bool { return e.endpointsOf(t, "gone") == nil })
}

// TestPlaceholderAndNoSelector: a Service selecting nothing gets one empty
// slice and an empty Endpoints; one without a selector gets neither.
func TestPlaceholderAndNoSelector(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "idle", "10.96.0.54", tcpPort("http", 80, intstr.FromInt32(8080)))
	eventually(t, "placeholder", func() bool { return len(e.slicesOf(t, "idle")) == 1 && e.endpointsOf(t, "idle") != nil })
	es := e.slicesOf(t, "idle")[0]
	assert.Empty(t, es.Endpoints)
	assert.Empty(t, es.Ports)
	assert.Empty(t, e.endpointsOf(t, "idle").Subsets)

	manual := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "manual"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.55", ClusterIPs: []string{"10.96.0.55"}, Ports: []corev1.ServicePort{tcpPort("http", 80, intstr.FromInt32(80))}},
	}
	_, err := e.client.CoreV1().Services(e.ns).Create(e.ctx(), manual, metav1.CreateOptions{})
	require.NoError(t, err)
	// Once a later Service is published, the earlier one was synced too
	// (each gets its own sync; a barrier, not a timing assumption).
	e.createService(t, "later", "10.96.0.56", tcpPort("http", 80, intstr.FromInt32(8080)))
	eventually(t, "later published", func() bool { return len(e.slicesOf(t, "later")) == 1 && e.endpointsOf(t, "later") != nil })
	assert.Empty(t, e.slicesOf(t, "manual"))
	assert.Nil(t, e.endpointsOf(t, "manual"))
}

// TestRepairsTampering: a managed slice deleted or edited by someone else
// is put back.
func TestRepairsTampering(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "fix", "10.96.0.57", tcpPort("http", 80, intstr.FromInt32(8080)))
	e.createPod(t, podSpec{name: "fix-0", app: "fix", ip: podIP(40), ready: true})
	eventually(t, "published", func() bool { return len(state(e.slicesOf(t, "fix"))) == 1 })

	es := e.slicesOf(t, "fix")[0]
	es.Endpoints = nil
	_, err := e.client.DiscoveryV1().EndpointSlices(e.ns).Update(e.ctx(), &es, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "edit reverted", func() bool { return mapsEqual(state(e.slicesOf(t, "fix")), map[string]string{"fix-0": "RS-"}) })

	es = e.slicesOf(t, "fix")[0]
	require.NoError(t, e.client.DiscoveryV1().EndpointSlices(e.ns).Delete(e.ctx(), es.Name, metav1.DeleteOptions{}))
	eventually(t, "recreated", func() bool {
		l := e.slicesOf(t, "fix")
		return len(l) == 1 && l[0].Name != es.Name && len(l[0].Endpoints) == 1
	})
}

// TestWritesOnlyChanges: updates that change nothing an endpoint shows
// (a Service annotation, a pod annotation) write nothing; a readiness
// change writes the one slice and the Endpoints once.
func TestWritesOnlyChanges(t *testing.T) {
	e := newEnv(t)
	e.createService(t, "calm", "10.96.0.58", tcpPort("http", 80, intstr.FromInt32(8080)))
	e.createPod(t, podSpec{name: "calm-0", app: "calm", ip: podIP(50), ready: true})
	e.createPod(t, podSpec{name: "calm-1", app: "calm", ip: podIP(51), ready: true})
	eventually(t, "published", func() bool {
		return len(state(e.slicesOf(t, "calm"))) == 2 && len(subsetState(e.endpointsOf(t, "calm"))) == 2
	})

	sw, err := e.client.DiscoveryV1().EndpointSlices(e.ns).Watch(e.ctx(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=calm", ResourceVersion: e.slicesOf(t, "calm")[0].ResourceVersion})
	require.NoError(t, err)
	defer sw.Stop()
	ew, err := e.client.CoreV1().Endpoints(e.ns).Watch(e.ctx(), metav1.ListOptions{
		FieldSelector: "metadata.name=calm", ResourceVersion: e.endpointsOf(t, "calm").ResourceVersion})
	require.NoError(t, err)
	defer ew.Stop()

	svc, err := e.client.CoreV1().Services(e.ns).Get(e.ctx(), "calm", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Annotations = map[string]string{"note": "irrelevant"}
	_, err = e.client.CoreV1().Services(e.ns).Update(e.ctx(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx(), "calm-0", metav1.GetOptions{})
	require.NoError(t, err)
	pod.Annotations = map[string]string{"note": "irrelevant"}
	_, err = e.client.CoreV1().Pods(e.ns).Update(e.ctx(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.markReady(t, "calm-1", false)
	eventually(t, "unready published", func() bool {
		return state(e.slicesOf(t, "calm"))["calm-1"] == "---" && subsetState(e.endpointsOf(t, "calm"))["calm-1"] == "notready"
	})
	// A barrier: another Service synced after these.
	e.createService(t, "barrier", "10.96.0.59", tcpPort("http", 80, intstr.FromInt32(8080)))
	eventually(t, "barrier published", func() bool { return len(e.slicesOf(t, "barrier")) == 1 && e.endpointsOf(t, "barrier") != nil })

	assert.Equal(t, []string{"MODIFIED"}, drainTypes(sw.ResultChan(), 1), "slice writes")
	assert.Equal(t, []string{"MODIFIED"}, drainTypes(ew.ResultChan(), 1), "endpoints writes")
}
