package endpointslice_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/controller/endpointslice"
)

// env is an in-process API server with both controllers running.
type env struct {
	client kubernetes.Interface
	ns     string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	c := controllertest.NewCluster(t)
	c.StartManager(t, controller.ManagerConfig{},
		controllertest.Registration{Name: endpointslice.Name, New: endpointslice.NewFunc(endpointslice.Config{})},
		controllertest.Registration{Name: endpointslice.EndpointsName, New: endpointslice.NewEndpointsFunc()},
	)
	return &env{client: c.Client, ns: "default"}
}

func (e *env) ctx() context.Context { return context.Background() }

// createService creates a Service selecting app=name.
func (e *env) createService(t testing.TB, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{"team": "blue"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name}, ClusterIP: clusterIP, Ports: ports,
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
		},
	}
	if clusterIP != corev1.ClusterIPNone {
		svc.Spec.ClusterIPs = []string{clusterIP}
	}
	out, err := e.client.CoreV1().Services(e.ns).Create(e.ctx(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	return out
}

func tcpPort(name string, port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}
}

type podSpec struct {
	name, app, ip string
	ready         bool
	ports         []corev1.ContainerPort
	hostname      string
	subdomain     string
}

// createPod creates a pod bound to node-1 and reports it running with ip.
func (e *env) createPod(t testing.TB, p podSpec) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: p.name, Labels: map[string]string{"app": p.app}},
		Spec: corev1.PodSpec{
			NodeName: "node-1", Hostname: p.hostname, Subdomain: p.subdomain,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Ports: p.ports}},
		},
	}
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status.Phase = corev1.PodRunning
	created.Status.PodIP = p.ip
	created.Status.PodIPs = []corev1.PodIP{{IP: p.ip}}
	setReady(created, p.ready)
	out, err := e.client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx(), created, metav1.UpdateOptions{})
	require.NoError(t, err)
	return out
}

func setReady(pod *corev1.Pod, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			pod.Status.Conditions[i].Status = status
			pod.Status.Conditions[i].LastTransitionTime = now
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: now})
}

// markReady flips a pod's Ready condition through the status subresource.
func (e *env) markReady(t testing.TB, name string, ready bool) {
	t.Helper()
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx(), name, metav1.GetOptions{})
	require.NoError(t, err)
	setReady(pod, ready)
	_, err = e.client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// slicesOf lists the managed slices of a Service.
func (e *env) slicesOf(t testing.TB, svc string) []discoveryv1.EndpointSlice {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: endpointslice.ManagedBy})
	list, err := e.client.DiscoveryV1().EndpointSlices(e.ns).List(e.ctx(), metav1.ListOptions{LabelSelector: sel.String()})
	require.NoError(t, err)
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// endpointsOf returns the Endpoints object of a Service, nil when absent.
func (e *env) endpointsOf(t testing.TB, svc string) *corev1.Endpoints {
	t.Helper()
	ep, err := e.client.CoreV1().Endpoints(e.ns).Get(e.ctx(), svc, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return ep
}

// eventually polls cond until it holds; the deadline only bounds a broken
// test, nothing is asserted about timing.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// state summarises a Service's slices: pod name → "ready/serving/terminating"
// as "RST" letters (lower case for false), and the endpoint count.
func state(slices []discoveryv1.EndpointSlice) map[string]string {
	out := map[string]string{}
	b := func(p *bool, c string) string {
		if p != nil && *p {
			return c
		}
		return "-"
	}
	for _, es := range slices {
		for _, ep := range es.Endpoints {
			out[ep.TargetRef.Name] = b(ep.Conditions.Ready, "R") + b(ep.Conditions.Serving, "S") + b(ep.Conditions.Terminating, "T")
		}
	}
	return out
}

// subsetState summarises an Endpoints: pod name → "ready" or "notready".
func subsetState(ep *corev1.Endpoints) map[string]string {
	out := map[string]string{}
	if ep == nil {
		return out
	}
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			out[a.TargetRef.Name] = "ready"
		}
		for _, a := range ss.NotReadyAddresses {
			out[a.TargetRef.Name] = "notready"
		}
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func podIP(i int) string { return fmt.Sprintf("10.244.%d.%d", i/250, i%250+1) }

// drainTypes waits for at least n events on c (a broken test ends at a
// generous deadline), then returns the types of those and of any others
// already on their way.
func drainTypes(c <-chan watch.Event, n int) []string {
	var out []string
	deadline := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-c:
			if !ok {
				return out
			}
			out = append(out, string(ev.Type))
		case <-deadline:
			return out
		}
	}
	for {
		select {
		case ev, ok := <-c:
			if !ok {
				return out
			}
			out = append(out, string(ev.Type))
		case <-time.After(100 * time.Millisecond):
			return out
		}
	}
}
