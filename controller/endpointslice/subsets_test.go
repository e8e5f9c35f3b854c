package endpointslice

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ips(as []corev1.EndpointAddress) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.IP)
	}
	return out
}

func TestDesiredSubsets(t *testing.T) {
	svc := testService("web", svcPort("http", 80, intstr.FromString("web")), svcPort("metrics", 9090, intstr.FromInt32(9090)))
	list := []*corev1.Pod{
		testPod(3, withPort("web", 8080)),
		testPod(1, withPort("web", 8080), notReady),
		testPod(2), // no "web": metrics only
		testPod(4, withPort("web", 8080), terminating), // left out
		testPod(0, withPort("web", 8080)),
	}
	got := desiredSubsets(svc, list)
	require.Len(t, got, 2)
	assert.Equal(t, []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}, {Name: "metrics", Port: 9090, Protocol: "TCP"}}, got[0].Ports)
	assert.Equal(t, []string{"10.244.0.1", "10.244.0.4"}, ips(got[0].Addresses), "sorted by IP")
	assert.Equal(t, []string{"10.244.0.2"}, ips(got[0].NotReadyAddresses))
	assert.Equal(t, []corev1.EndpointPort{{Name: "metrics", Port: 9090, Protocol: "TCP"}}, got[1].Ports)
	assert.Equal(t, []string{"10.244.0.3"}, ips(got[1].Addresses))
	a := got[0].Addresses[0]
	assert.Equal(t, "n1", *a.NodeName)
	assert.Equal(t, &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p0", UID: "pod-0"}, a.TargetRef)

	svc.Spec.PublishNotReadyAddresses = true
	got = desiredSubsets(svc, list)
	assert.Equal(t, []string{"10.244.0.1", "10.244.0.2", "10.244.0.4", "10.244.0.5"}, ips(got[0].Addresses), "all, terminating too")
	assert.Empty(t, got[0].NotReadyAddresses)

	// Headless without ports: one subset without ports; hostnames set.
	hl := testService("db")
	hl.Spec.ClusterIP = corev1.ClusterIPNone
	pod := testPod(0)
	pod.Spec.Hostname, pod.Spec.Subdomain = "db-0", "db"
	got = desiredSubsets(hl, []*corev1.Pod{pod, testPod(1)})
	require.Len(t, got, 1)
	assert.Empty(t, got[0].Ports)
	assert.Equal(t, "db-0", got[0].Addresses[0].Hostname)
	assert.Equal(t, "", got[0].Addresses[1].Hostname)

	// Primary family only.
	v6 := testService("v6", svcPort("http", 80, intstr.FromInt32(80)))
	v6.Spec.ClusterIP, v6.Spec.IPFamilies = "fd00::50", []corev1.IPFamily{corev1.IPv6Protocol}
	ds := testPod(0)
	ds.Status.PodIPs = append(ds.Status.PodIPs, corev1.PodIP{IP: "fd00::9"})
	got = desiredSubsets(v6, []*corev1.Pod{ds, testPod(1)})
	require.Len(t, got, 1)
	assert.Equal(t, []string{"fd00::9"}, ips(got[0].Addresses), "the single-stack pod has no IPv6 address")
}

func TestTruncate(t *testing.T) {
	mk := func(n int) []corev1.EndpointAddress {
		out := make([]corev1.EndpointAddress, n)
		for i := range out {
			out[i].IP = "10.0.0.1"
		}
		return out
	}
	subsets := []corev1.EndpointSubset{{Addresses: mk(600), NotReadyAddresses: mk(100)}, {Addresses: mk(300), NotReadyAddresses: mk(100)}}
	require.True(t, truncate(subsets, 1000))
	ready, notReady := countAddresses(subsets)
	assert.Equal(t, 900, ready, "ready addresses are kept first")
	assert.Equal(t, 100, notReady)
	assert.Len(t, subsets[0].NotReadyAddresses, 50, "the cut is shared in proportion")

	subsets = []corev1.EndpointSubset{{Addresses: mk(800), NotReadyAddresses: mk(5)}, {Addresses: mk(400)}}
	require.True(t, truncate(subsets, 1000))
	ready, notReady = countAddresses(subsets)
	assert.Equal(t, 1000, ready)
	assert.Zero(t, notReady)

	assert.False(t, truncate([]corev1.EndpointSubset{{Addresses: mk(1000)}}, 1000))
}

func TestTriggerTracker(t *testing.T) {
	tr := newTriggerTracker()
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := testService("web")
	svc.CreationTimestamp = metav1.NewTime(created)
	p := testPod(0)
	t1 := created.Add(time.Minute)
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t1)
	assert.Equal(t, created, tr.compute(svc, []*corev1.Pod{p}), "first sync: the Service's creation")
	assert.True(t, tr.compute(svc, []*corev1.Pod{p}).IsZero(), "nothing changed since")

	q := testPod(1)
	t2, t3 := created.Add(2*time.Minute), created.Add(3*time.Minute)
	q.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t3)
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t2)
	assert.Equal(t, t2, tr.compute(svc, []*corev1.Pod{p, q}), "the earliest unpublished change")
	tr.forget("default", "web")
	assert.Equal(t, created, tr.compute(svc, []*corev1.Pod{p, q}))
}

func TestSliceTracker(t *testing.T) {
	tr := newSliceTracker()
	svc := testService("web")
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-a", UID: "a", ResourceVersion: "10",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}}
	assert.False(t, tr.stale(svc, nil))
	tr.wrote(es)
	assert.True(t, tr.ours(es))
	assert.True(t, tr.stale(svc, nil), "created but not cached yet")
	older := es.DeepCopy()
	older.ResourceVersion = "9"
	assert.True(t, tr.stale(svc, []*discoveryv1.EndpointSlice{older}), "cached version older than written")
	assert.False(t, tr.ours(older))
	assert.False(t, tr.stale(svc, []*discoveryv1.EndpointSlice{es}))
	tr.deleting(es)
	assert.True(t, tr.stale(svc, []*discoveryv1.EndpointSlice{es}), "deleted but still cached")
	assert.True(t, tr.deleted(es), "an expected deletion")
	assert.False(t, tr.stale(svc, nil))
	assert.False(t, tr.deleted(es.DeepCopy()), "not tracked: someone else's deletion")

	tr.wrote(es)
	recreated := svc.DeepCopy()
	recreated.UID = "svc-web-2"
	assert.True(t, tr.stale(svc, nil))
	assert.False(t, tr.stale(recreated, nil), "a new Service of the same name starts afresh")
}
