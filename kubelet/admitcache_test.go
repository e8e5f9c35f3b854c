package kubelet

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/scheduler"
)

func admitCachePod(uid, cpu string, port int32) *corev1.Pod {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	if port != 0 {
		c.Ports = []corev1.ContainerPort{{HostPort: port, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func admitCacheNode(pods string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse(pods)}}}
}

// requireSameNodeInfo checks that got counts what a NodeInfo rebuilt from
// scratch over pods counts: requests, host ports and the pods themselves
// (their latest objects).
func requireSameNodeInfo(t *testing.T, want, got *scheduler.NodeInfo) {
	t.Helper()
	assert.Equal(t, want.Requested.MilliCPU, got.Requested.MilliCPU)
	assert.Equal(t, want.Requested.Memory, got.Requested.Memory)
	assert.Equal(t, want.NonZeroRequested.MilliCPU, got.NonZeroRequested.MilliCPU)
	assert.Equal(t, want.NonZeroRequested.Memory, got.NonZeroRequested.Memory)
	assert.Equal(t, len(want.UsedPorts), len(got.UsedPorts))
	for p, n := range want.UsedPorts {
		assert.Equal(t, n, got.UsedPorts[p], "port %v", p)
	}
	objects := func(ni *scheduler.NodeInfo) []string {
		var out []string
		for _, pi := range ni.Pods {
			out = append(out, fmt.Sprintf("%s@%p", pi.Pod.UID, pi.Pod))
		}
		sort.Strings(out)
		return out
	}
	require.Equal(t, objects(want), objects(got))
}

// The accounting counts exactly what a NodeInfo rebuilt for every
// admission counts, through admissions, updates (new objects of a pod,
// resized requests), terminations and deletions in any order, and leaves
// out the pod being admitted.
func TestAdmittedPodsMatchRebuiltNodeInfo(t *testing.T) {
	node := admitCacheNode("110")
	var a admittedPods
	want := map[types.UID]*corev1.Pod{}
	check := func(except types.UID) {
		t.Helper()
		var pods []*corev1.Pod
		for uid, p := range want {
			if uid != except {
				pods = append(pods, p)
			}
		}
		a.mu.Lock()
		got := a.nodeInfoLocked(node, 110, except)
		requireSameNodeInfo(t, scheduler.NewNodeInfo(node, pods...), got)
		a.mu.Unlock()
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for step := range 2000 {
		uid := types.UID(fmt.Sprintf("p%d", rnd.IntN(30)))
		switch op := rnd.IntN(10); {
		case op < 5: // admitted, or a new object of an admitted pod
			p := admitCachePod(string(uid), fmt.Sprintf("%dm", 100+rnd.IntN(900)), int32(8000+rnd.IntN(5)))
			a.set(uid, p)
			want[uid] = p
		case op < 8: // terminated, removed, or deleted
			a.set(uid, nil)
			delete(want, uid)
		default: // an echo: the same object again
			a.set(uid, want[uid])
		}
		if step%7 == 0 {
			check(types.UID(fmt.Sprintf("p%d", rnd.IntN(30))))
		}
	}
	check("")
	for uid := range want {
		a.set(uid, nil)
	}
	a.mu.Lock()
	ni := a.nodeInfoLocked(node, 110, "")
	a.mu.Unlock()
	assert.Empty(t, ni.Pods)
	assert.Empty(t, ni.UsedPorts)
	assert.Zero(t, ni.Requested.MilliCPU)
	assert.Empty(t, a.want, "nothing is kept of pods that no longer count")
	assert.Empty(t, a.counted)
}

// The node's pod capacity is the smaller of its allocatable pods and
// MaxPods, follows the Node object as it changes, and never modifies it.
func TestAdmittedPodsNodeCapacity(t *testing.T) {
	var a admittedPods
	a.mu.Lock()
	defer a.mu.Unlock()
	small := admitCacheNode("10")
	assert.Equal(t, int64(10), a.nodeInfoLocked(small, 110, "").Allocatable.AllowedPodNumber)
	assert.Equal(t, "10", small.Status.Allocatable.Pods().String(), "the informer's Node is not modified")
	big := admitCacheNode("500")
	assert.Equal(t, int64(110), a.nodeInfoLocked(big, 110, "").Allocatable.AllowedPodNumber)
	none := admitCacheNode("1")
	delete(none.Status.Allocatable, corev1.ResourcePods)
	ni := a.nodeInfoLocked(none, 110, "")
	assert.Equal(t, int64(110), ni.Allocatable.AllowedPodNumber)
	assert.Equal(t, int64(64000), ni.Allocatable.MilliCPU)
	assert.Same(t, none, ni.Node())
}

// Every change of a pod worker that matters to admission reaches the
// accounting: admission, new objects while it runs, termination (a pod
// that finished), removal from its source, and the end of the worker.
func TestPodWorkersKeepAdmissionAccounting(t *testing.T) {
	k := &Kubelet{clock: clocktesting.NewFakeClock(time.Unix(1000, 0))}
	p := newPodWorkers(k) // never started: no goroutines
	counted := func() map[types.UID]*corev1.Pod {
		k.admitted.mu.Lock()
		defer k.admitted.mu.Unlock()
		return maps.Clone(k.admitted.want)
	}
	a, b := admitCachePod("a", "100m", 0), admitCachePod("b", "200m", 0)
	p.update(a, false)
	p.update(b, false)
	assert.Empty(t, counted(), "not admitted yet")

	wa, wb := p.get("a"), p.get("b")
	wa.setActive(true)
	wb.setActive(true)
	assert.Equal(t, map[types.UID]*corev1.Pod{"a": a, "b": b}, counted())

	echo := a.DeepCopy()
	echo.Status.Phase = corev1.PodRunning
	p.update(echo, false)
	assert.Same(t, a, counted()["a"], "a status echo counts as the object before it")
	a2 := a.DeepCopy()
	a2.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("300m")
	p.update(a2, false)
	assert.Same(t, a2, counted()["a"], "a new spec counts")

	wb.setActive(false) // finished: its resources were released
	assert.Equal(t, map[types.UID]*corev1.Pod{"a": a2}, counted())
	p.update(b.DeepCopy(), false) // a status echo of the finished pod
	assert.NotContains(t, counted(), types.UID("b"))

	p.remove("a") // gone from its source
	assert.Empty(t, counted())
	p.update(a, false) // back (a removal the source took back)
	assert.Same(t, a, counted()["a"])

	wa.setActive(true)
	assert.True(t, p.finish(wa, true))
	assert.Empty(t, counted(), "a finished worker counts no more")
}
