package kubelet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/kubelet"
)

func failed(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodFailed }

func TestAdmissionRejects(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mutate         func(*corev1.Pod)
		reason, detail string
	}{{
		name: "cpu",
		mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		},
		reason: "OutOfcpu",
		detail: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000",
	}, {
		name: "memory",
		mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
		},
		reason: "OutOfmemory",
		detail: "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824",
	}, {
		name:   "node selector",
		mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} },
		reason: "NodeAffinity",
		detail: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
	}, {
		name: "NoExecute taint",
		mutate: func(p *corev1.Pod) {
			// NoSchedule taints are the scheduler's business, not the kubelet's.
			p.Spec.Tolerations = []corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}}
		},
		reason: "TaintToleration",
		detail: "Predicate TaintToleration failed: node(s) had untolerated taint",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var taints []corev1.Taint
			if tc.reason == "TaintToleration" {
				taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute},
					{Key: "soft", Effect: corev1.TaintEffectNoSchedule}}
			}
			e := newEnvNode(t, nodeSpec{"1", "1Gi", taints})
			e.start()
			pod := e.pod("big", []string{"sleep", "inf"})
			tc.mutate(pod)
			e.create(pod)
			p := e.waitPod("big", "rejected", failed)
			assert.Equal(t, tc.reason, p.Status.Reason)
			assert.Equal(t, "Pod was rejected: "+tc.detail, p.Status.Message)
			e.waitEvent("big", "Warning "+tc.reason+" "+tc.detail)
			_, ctrs, err := e.runtime.List(t.Context())
			require.NoError(t, err)
			assert.Empty(t, ctrs, "nothing of a rejected pod runs")
		})
	}
}

func TestAdmissionCountsRunningPods(t *testing.T) {
	e := newEnvNode(t, nodeSpec{"1", "1Gi", nil}, func(c *kubelet.Config) { c.MaxPods = 2 })
	e.start()
	first := e.pod("first", []string{"sleep", "inf"})
	first.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}
	e.create(first)
	e.waitPod("first", "Running", running)
	second := e.pod("second", []string{"sleep", "inf"})
	second.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}
	e.create(second)
	p := e.waitPod("second", "rejected", failed)
	assert.Equal(t, "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000", p.Status.Message)

	e.create(e.pod("third", []string{"sleep", "inf"}))
	e.waitPod("third", "Running", running)
	e.create(e.pod("fourth", []string{"sleep", "inf"}))
	p = e.waitPod("fourth", "rejected", failed)
	assert.Equal(t, "OutOfpods", p.Status.Reason)
	assert.Equal(t, "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2", p.Status.Message)
}

// A deleted pod no longer counts against the node: its requests, its host
// port and its place in the pod count are free for the next pods; a pod
// updated while it runs counts once, with its latest object; rejected
// pods never count.
func TestAdmissionFreesDeletedPods(t *testing.T) {
	e := newEnvNode(t, nodeSpec{"1", "1Gi", nil}, func(c *kubelet.Config) { c.MaxPods = 3 })
	e.start()
	withCPU := func(name, cpu string, port int32) *corev1.Pod {
		p := e.pod(name, []string{"sleep", "inf"})
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if port != 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: port, Protocol: corev1.ProtocolTCP}}
		}
		return p
	}
	rejected := func(name, msg string) {
		t.Helper()
		p := e.waitPod(name, "rejected", failed)
		assert.Equal(t, "Pod was rejected: "+msg, p.Status.Message)
	}
	e.create(withCPU("first", "600m", 8080))
	e.waitPod("first", "Running", running)
	e.create(withCPU("over", "500m", 0))
	rejected("over", "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000")
	deleted := e.watchDeletion("first")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(t.Context(), "first", metav1.DeleteOptions{}))
	<-deleted

	// The deleted pod's CPU and host port are free again. (Its worker
	// forgets it just after deleting the API object: a pod that arrives
	// in between may still find it counted and be rejected; the next
	// one fits.)
	var name string
	for i := 0; name == ""; i++ {
		require.Less(t, i, 20, "the deleted pod's resources were never freed")
		n := fmt.Sprintf("second-%d", i)
		e.create(withCPU(n, "800m", 8080))
		if running(e.waitPod(n, "admitted or rejected", func(p *corev1.Pod) bool { return running(p) || failed(p) })) {
			name = n
		}
	}
	second := e.get(name)
	second.Labels = map[string]string{"updated": "yes"}
	_, err := e.client.CoreV1().Pods("default").Update(t.Context(), second, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.waitPod(name, "updated", func(p *corev1.Pod) bool { return p != nil && p.Labels["updated"] == "yes" })
	e.create(withCPU("over2", "300m", 0))
	rejected("over2", "Node didn't have enough resource: cpu, requested: 300, used: 800, capacity: 1000")

	// Of the pods created so far, only the running "second" counts: two
	// more fit.
	e.create(e.pod("third", []string{"sleep", "inf"}))
	e.waitPod("third", "Running", running)
	e.create(e.pod("fourth", []string{"sleep", "inf"}))
	e.waitPod("fourth", "Running", running)
	e.create(e.pod("fifth", []string{"sleep", "inf"}))
	rejected("fifth", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3")
}

func TestAdmissionHostPortConflict(t *testing.T) {
	e := newEnv(t)
	e.start()
	withPort := func(name string) *corev1.Pod {
		p := e.pod(name, []string{"sleep", "inf"})
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		return p
	}
	e.create(withPort("first"))
	e.waitPod("first", "Running", running)
	e.create(withPort("second"))
	p := e.waitPod("second", "rejected", failed)
	assert.Equal(t, "NodePorts", p.Status.Reason)
	assert.Equal(t, "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports", p.Status.Message)
}

func TestAppArmorSoftAdmission(t *testing.T) {
	e := newEnv(t)
	root := e.cfg.AppArmorRoot
	require.NoError(t, os.MkdirAll(filepath.Join(root, "module/apparmor/parameters"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "kernel/security/apparmor"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "module/apparmor/parameters/enabled"), []byte("Y\n"), 0o644))
	profiles := filepath.Join(root, "kernel/security/apparmor/profiles")
	require.NoError(t, os.WriteFile(profiles, []byte("docker-default (enforce)\n"), 0o644))
	e.start()
	pod := e.pod("armored", []string{"sleep", "inf"})
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{
		Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("k8s-strict")}}
	e.create(pod)
	p := e.waitPod("armored", "blocked", func(p *corev1.Pod) bool { return p != nil && p.Status.Reason == "AppArmor" })
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	assert.Equal(t, `Cannot enforce AppArmor: profile "k8s-strict" is not loaded`, p.Status.Message)
	cs := containerStatus(p, "app")
	require.NotNil(t, cs.State.Waiting)
	assert.Equal(t, "Blocked", cs.State.Waiting.Reason)

	// Once the profile is loaded, the next sync runs the pod.
	require.NoError(t, os.WriteFile(profiles, []byte("docker-default (enforce)\nk8s-strict (enforce)\n"), 0o644))
	e.step(kubelet.DefaultResyncInterval)
	p = e.waitPod("armored", "Running", running)
	assert.Empty(t, p.Status.Reason, dump(p))
}
