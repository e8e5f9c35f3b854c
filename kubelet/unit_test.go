package kubelet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/sandbox"
)

func TestBackoff(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := newBackoff(DefaultBackoff, c)
	key := "uid/app"
	exit := c.Now()
	in, _ := b.InBackOffSince(key, exit)
	assert.False(t, in, "no failure yet")

	var delays []time.Duration
	for range 8 {
		delays = append(delays, b.Next(key, c.Now()))
		in, end := b.InBackOffSince(key, c.Now())
		assert.True(t, in)
		c.SetTime(end)
		in, _ = b.InBackOffSince(key, exit)
		assert.False(t, in, "an older exit is out of back-off")
	}
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	assert.Equal(t, []time.Duration{s(10), s(20), s(40), s(80), s(160), s(300), s(300), s(300)}, delays)

	// A failure more than ResetAfter after the last restart starts over.
	c.Step(11 * time.Minute)
	assert.Equal(t, s(10), b.Next(key, c.Now()))

	// Image pulls count from the failure itself.
	pull := "uid/img"
	b.Next(pull, c.Now())
	in, end := b.InBackOffSinceUpdate(pull)
	assert.True(t, in)
	assert.Equal(t, c.Now().Add(s(10)), end)
	c.Step(s(10))
	in, _ = b.InBackOffSinceUpdate(pull)
	assert.False(t, in)

	b.ForgetPrefix("uid/")
	assert.Zero(t, b.Get(key))
	assert.Zero(t, b.Get(pull))
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "$(A)"}
	for in, want := range map[string]string{
		"":               "",
		"plain":          "plain",
		"$(A)":           "x",
		"a$(A)b$(A)":     "axbx",
		"$$(A)":          "$(A)",
		"$(B)":           "$(A)",
		"$(C)":           "$(C)",
		"$(A":            "$(A",
		"$":              "$",
		"$x":             "$x",
		"cost: $$5":      "cost: $5",
		"$(A)$(":         "x$(",
		"$()":            "$()",
		"nested $(A)$$$": "nested x$$",
	} {
		assert.Equal(t, want, expand(in, vars), "expand(%q)", in)
	}
}

func TestTolerates(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}
	for _, tc := range []struct {
		tol  corev1.Toleration
		want bool
	}{
		{corev1.Toleration{Key: "dedicated", Value: "db"}, true},
		{corev1.Toleration{Key: "dedicated", Value: "web"}, false},
		{corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}, true},
		{corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, false},
		{corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}, false},
	} {
		assert.Equal(t, tc.want, tolerates(&tc.tol, &taint), "%+v", tc.tol)
	}
	assert.True(t, untoleratedNoExecute([]corev1.Taint{taint}, nil))
	assert.False(t, untoleratedNoExecute([]corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}, nil),
		"the kubelet checks NoExecute taints only")
}

func TestRuntimeCacheRelistKeepsNewerUpdates(t *testing.T) {
	c := newRuntimeCache()
	ctr := func(id, uid string, state sandbox.ContainerState) *sandbox.ContainerStatus {
		return &sandbox.ContainerStatus{ID: id, Name: "app", State: state, Labels: map[string]string{LabelPodUID: uid}}
	}
	changed := c.replace(c.generation(), nil, []*sandbox.ContainerStatus{ctr("c1", "p1", sandbox.ContainerStateRunning)})
	assert.Equal(t, map[string]bool{"p1": true}, toStrings(changed))

	// A relist that began before a worker's update does not undo it.
	since := c.generation()
	c.putContainer(ctr("c2", "p2", sandbox.ContainerStateCreated))
	c.putContainer(ctr("c1", "p1", sandbox.ContainerStateExited))
	changed = c.replace(since, nil, []*sandbox.ContainerStatus{ctr("c1", "p1", sandbox.ContainerStateRunning)})
	assert.Empty(t, changed)
	assert.Equal(t, sandbox.ContainerStateExited, c.get("p1").Containers[0].State)
	assert.Len(t, c.get("p2").Containers, 1)

	// Nor does it bring back what a worker removed meanwhile.
	since = c.generation()
	c.deleteContainer("c2")
	c.replace(since, nil, []*sandbox.ContainerStatus{ctr("c1", "p1", sandbox.ContainerStateExited), ctr("c2", "p2", sandbox.ContainerStateCreated)})
	assert.Empty(t, c.get("p2").Containers)

	// An exited container never goes back to running.
	c.putContainer(ctr("c1", "p1", sandbox.ContainerStateRunning))
	assert.Equal(t, sandbox.ContainerStateExited, c.get("p1").Containers[0].State)

	// A later relist sees what is gone.
	changed = c.replace(c.generation(), nil, nil)
	assert.Equal(t, map[string]bool{"p1": true}, toStrings(changed))
	assert.Empty(t, c.uids())
}

func toStrings[K ~string](m map[K]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

func TestDecodeStaticPod(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: etcd, namespace: kube-system}\nspec:\n  containers: [{name: etcd, image: etcd:3}]\n")
	now := time.Unix(0, 0)
	a, err := decodeStaticPod(manifest, "/etc/pods/etcd.yaml", "n1", now)
	require.NoError(t, err)
	b, err := decodeStaticPod(manifest, "/etc/pods/etcd.yaml", "n1", now.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, a.UID, b.UID, "the UID is a function of the file, not of when it was read")
	c, err := decodeStaticPod(manifest, "/etc/pods/etcd.yaml", "n2", now)
	require.NoError(t, err)
	assert.NotEqual(t, a.UID, c.UID, "another node, another UID")
	assert.Equal(t, "etcd-n1", a.Name)
	assert.Equal(t, "kube-system", a.Namespace)
	assert.Equal(t, "n1", a.Spec.NodeName)
	assert.Equal(t, "file", a.Annotations[AnnotationConfigSource])
	assert.Equal(t, string(a.UID), a.Annotations[AnnotationConfigHash])
	assert.Equal(t, corev1.RestartPolicyAlways, a.Spec.RestartPolicy, "API defaults")
	assert.Equal(t, "/dev/termination-log", a.Spec.Containers[0].TerminationMessagePath)
	assert.Contains(t, a.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	assert.True(t, isStaticPod(a))

	for _, bad := range []string{"kind: Service\nmetadata: {name: x}", "metadata: {name: x}\nspec: {}", "spec: {containers: [{name: a}]}", "{{{"} {
		_, err := decodeStaticPod([]byte(bad), "/p", "n1", now)
		assert.Error(t, err, bad)
	}
}

func TestSecurityConfig(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptrTo(int64(1000)), FSGroup: ptrTo(int64(2000)), SupplementalGroups: []int64{3000}},
	}}
	c := &corev1.Container{Name: "app", SecurityContext: &corev1.SecurityContext{
		RunAsUser: ptrTo(int64(1001)), AllowPrivilegeEscalation: ptrTo(false), ReadOnlyRootFilesystem: ptrTo(true),
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
	}}
	sc := securityConfig(pod, c)
	assert.Equal(t, int64(1001), *sc.RunAsUser)
	assert.Equal(t, []int64{3000, 2000}, sc.SupplementalGroups)
	assert.True(t, sc.NoNewPrivs, "allowPrivilegeEscalation: false")
	assert.True(t, sc.ReadOnlyRootfs)
	assert.Equal(t, []string{"NET_ADMIN"}, sc.CapAdd)
	assert.Equal(t, []string{"ALL"}, sc.CapDrop)

	nonRoot := &corev1.Container{Name: "app", SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true)}}
	for _, tc := range []struct {
		user, err string
	}{
		{"", `container has runAsNonRoot and image will run as root (pod: "p_ns(u)", container: app)`},
		{"0:0", `container has runAsNonRoot and image will run as root (pod: "p_ns(u)", container: app)`},
		{"nginx", `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "p_ns(u)", container: app)`},
		{"1000", ""},
	} {
		err := verifyRunAsNonRoot(&corev1.Pod{ObjectMeta: pod.ObjectMeta}, nonRoot, sandbox.SecurityConfig{}, tc.user)
		if tc.err == "" {
			assert.NoError(t, err, tc.user)
		} else {
			assert.EqualError(t, err, tc.err, tc.user)
		}
	}
	err := verifyRunAsNonRoot(pod, nonRoot, sandbox.SecurityConfig{RunAsUser: ptrTo(int64(0))}, "")
	assert.EqualError(t, err, `container's runAsUser breaks non-root policy (pod: "p_ns(u)", container: app)`)
}

func TestSandboxHashFollowsTheSandboxShape(t *testing.T) {
	base := sandbox.SandboxConfig{Hostname: "web", ResolvConf: []byte("nameserver 10.96.0.10\n")}
	h := sandboxHash(&base)
	same := base
	same.Labels = map[string]string{"new": "label"}
	same.Pod.Attempt = 3
	assert.Equal(t, h, sandboxHash(&same), "labels and attempts do not shape the sandbox")
	for _, mut := range []func(*sandbox.SandboxConfig){
		func(c *sandbox.SandboxConfig) { c.Hostname = "other" },
		func(c *sandbox.SandboxConfig) { c.ResolvConf = []byte("nameserver 1.1.1.1\n") },
		func(c *sandbox.SandboxConfig) { c.HostNetwork = true },
		func(c *sandbox.SandboxConfig) { c.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"} },
	} {
		c := base
		mut(&c)
		assert.NotEqual(t, h, sandboxHash(&c))
	}
}

func ptrTo[T any](v T) *T { return &v }
