package kubelet

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/sandbox"
)

// The kubelet's shortcuts answer as the long way does: comparisons without
// reflection or re-encoding, memoised results, indexed and cached views.

// sameContainerStatus agrees with reflect.DeepEqual on statuses that
// differ in any one field, and on nil against empty maps.
func TestSameContainerStatus(t *testing.T) {
	now := time.Unix(1000, 5)
	base := func() *sandbox.ContainerStatus {
		return &sandbox.ContainerStatus{ID: "c", SandboxID: "s", Name: "app", Attempt: 1, State: sandbox.ContainerStateRunning,
			CreatedAt: now, StartedAt: now, FinishedAt: now, ExitCode: 1, Reason: "r", Message: "m", PID: 7,
			Image: "i", ImageID: "id", LogPath: "/l", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}
	}
	assert.True(t, sameContainerStatus(base(), base()))
	typ := reflect.TypeFor[sandbox.ContainerStatus]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		b := base()
		v := reflect.ValueOf(b).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int, reflect.Int32:
			v.SetInt(v.Int() + 1)
		case reflect.Uint32:
			v.SetUint(v.Uint() + 1)
		case reflect.Map:
			v.Set(reflect.ValueOf(map[string]string{"other": "x"}))
		case reflect.Struct: // time.Time
			v.Set(reflect.ValueOf(now.Add(time.Second)))
		default:
			t.Fatalf("field %s of kind %s: teach this test (and sameContainerStatus) about it", f.Name, v.Kind())
		}
		assert.False(t, sameContainerStatus(base(), b), "a different %s", f.Name)
		assert.Equal(t, reflect.DeepEqual(base(), b), sameContainerStatus(base(), b), f.Name)
	}
	nilMaps, emptyMaps := base(), base()
	nilMaps.Labels, emptyMaps.Labels = nil, map[string]string{}
	assert.Equal(t, reflect.DeepEqual(nilMaps, emptyMaps), sameContainerStatus(nilMaps, emptyMaps))
	zoned := base()
	zoned.StartedAt = now.In(time.FixedZone("x", 0))
	other := base()
	other.StartedAt = now.In(time.FixedZone("x", 0))
	assert.Equal(t, reflect.DeepEqual(zoned, other), sameContainerStatus(zoned, other), "equal zones behind different pointers")
}

// An update is worth a sync when the spec, labels, annotations or deletion
// changed, or someone else finished the pod; a status echo is not, nor a
// spec written another way (semantically equal), across updates in a row.
func TestPodChanged(t *testing.T) {
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*corev1.Pod)
		changed bool
		oneWay  bool // back is no change
	}{
		{"status echo", func(p *corev1.Pod) { p.Status.Message = "x"; p.ResourceVersion = "9" }, false, false},
		{"quantity written another way", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		}, false, false},
		{"empty annotations", func(p *corev1.Pod) { p.Annotations = map[string]string{} }, false, false},
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "web:2" }, true, false},
		{"deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) }, true, false},
		{"labels", func(p *corev1.Pod) { p.Labels["tier"] = "front" }, true, false},
		{"annotations", func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, true, false},
		{"deletion", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, true, false},
		{"grace", func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = ptr.To[int64](0) }, true, false},
		{"finished elsewhere", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &podWorker{pod: pod(nil)}
			assert.False(t, w.podChangedLocked(pod(nil)))
			w.pod = pod(nil)
			assert.Equal(t, tc.changed, w.podChangedLocked(pod(tc.mutate)))
			// The next update compares with the one before it.
			w.pod = pod(tc.mutate)
			assert.Equal(t, tc.changed && !tc.oneWay, w.podChangedLocked(pod(nil)))
			w.pod = pod(nil)
			assert.False(t, w.podChangedLocked(pod(nil)))
		})
	}
}

// The cache answers whether an event is news (the container is not known in
// the announced state or a later one), keeps one sorted view per pod until
// the pod changes, and a relist reports exactly the pods whose sandboxes
// or containers changed state.
func TestRuntimeCacheEventsViewsAndRelists(t *testing.T) {
	c := newRuntimeCache()
	ctr := func(id string, state sandbox.ContainerState) *sandbox.ContainerStatus {
		return &sandbox.ContainerStatus{ID: id, Name: id, SandboxID: "s", State: state, Labels: map[string]string{LabelPodUID: "p"}}
	}
	sb := &sandbox.Sandbox{ID: "s", State: sandbox.SandboxReady, Labels: map[string]string{LabelPodUID: "p"}}
	c.putSandbox(sb)
	c.putContainer(ctr("c1", sandbox.ContainerStateRunning))
	for typ, want := range map[sandbox.ContainerEventType]bool{
		sandbox.ContainerCreated: true, sandbox.ContainerStarted: true,
		sandbox.ContainerStopped: false, sandbox.ContainerDeleted: false,
	} {
		assert.Equal(t, want, c.reflects("c1", typ), typ)
	}
	assert.False(t, c.reflects("unknown", sandbox.ContainerCreated))

	v1, v2 := c.get("p"), c.get("p")
	require.Len(t, v1.Containers, 1)
	assert.Same(t, &v1.Containers[0], &v2.Containers[0], "one view until the pod changes")
	c.putContainer(ctr("c1", sandbox.ContainerStateExited))
	assert.Equal(t, sandbox.ContainerStateExited, c.get("p").Containers[0].State)
	assert.True(t, c.reflects("c1", sandbox.ContainerStopped))
	assert.Equal(t, sandbox.ContainerStateRunning, v1.Containers[0].State, "an earlier view is not modified")

	exited := []*sandbox.ContainerStatus{ctr("c1", sandbox.ContainerStateExited)}
	assert.Empty(t, c.replace(c.generation(), []*sandbox.Sandbox{sb}, exited), "nothing changed")
	stopped := *sb
	stopped.State = sandbox.SandboxNotReady
	assert.Equal(t, map[string]bool{"p": true}, toStrings(c.replace(c.generation(), []*sandbox.Sandbox{&stopped}, exited)))
	assert.Equal(t, map[string]bool{"p": true}, toStrings(c.replace(c.generation(), []*sandbox.Sandbox{&stopped},
		append(exited, ctr("c2", sandbox.ContainerStateCreated)))), "a new container")
	assert.Equal(t, map[string]bool{"p": true}, toStrings(c.replace(c.generation(), []*sandbox.Sandbox{&stopped},
		[]*sandbox.ContainerStatus{ctr("c1", sandbox.ContainerStateExited), ctr("c3", sandbox.ContainerStateCreated)})), "another container")

	// Containers a relist brought in or took away are indexed as such.
	assert.False(t, c.reflects("c2", sandbox.ContainerCreated), "gone with the last relist")
	assert.True(t, c.reflects("c3", sandbox.ContainerCreated))
	assert.Equal(t, types.UID("p"), c.deleteContainer("c3"))
	assert.Empty(t, c.deleteContainer("c3"))
	assert.Empty(t, c.deleteContainer("c2"))
	c.deleteSandbox("p", "s")
	assert.False(t, c.reflects("c1", sandbox.ContainerCreated))
	assert.Empty(t, c.uids())
	assert.Empty(t, c.podOf)
}

// The container hash, recorded on running containers, stays what earlier
// kubelets computed: a different one would restart every container.
func TestContainerHashIsStable(t *testing.T) {
	for _, c := range []corev1.Container{{Name: "app", Image: "web:1"}, {Name: "", Image: ""}, {Name: "a\x00b", Image: "é"}} {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s\x00%s", c.Name, c.Image)
		assert.Equal(t, strconv.FormatUint(uint64(h.Sum32()), 16), containerHash(&c))
	}
}

// The memoised resolv.conf is cni.ResolvConf's for every policy, namespace
// and host networking, with a dnsConfig or without, and each caller gets
// its own copy.
func TestResolvMemo(t *testing.T) {
	node := cni.NodeDNS{ClusterDNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, ClusterDomain: "cluster.local"}
	var m resolvMemo
	for range 2 {
		for _, ns := range []string{"default", "kube-system"} {
			for _, policy := range []corev1.DNSPolicy{"", corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone, corev1.DNSClusterFirstWithHostNet, "bogus"} {
				for _, hostNet := range []bool{false, true} {
					for _, dc := range []*corev1.PodDNSConfig{nil, {Nameservers: []string{"1.1.1.1"}, Searches: []string{"example.com"}}} {
						pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns},
							Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: dc}}
						want, wantWarn, wantErr := cni.ResolvConf(pod, node)
						got, gotWarn, gotErr := m.resolvConf(pod, node)
						assert.Equal(t, want, got)
						assert.Equal(t, wantWarn, gotWarn)
						assert.Equal(t, wantErr, gotErr)
						if len(got) > 0 {
							got[0] = '!' // the caller's own copy
						}
					}
				}
			}
		}
	}
}
