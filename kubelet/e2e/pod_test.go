package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/overlay"
)

// seedPod is the seeds' pod: an init container preparing a file, an app
// container with requests and limits (Burstable), a readiness probe, and
// configMap, secret and emptyDir volumes.
func (n *node) seedPod() *corev1.Pod {
	img := n.image
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(5)),
			InitContainers: []corev1.Container{{Name: "prepare", Image: img,
				Args: []string{"write", "/work/ready", "yes"}, VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: img, Args: []string{"sleep", "inf"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"/bin/testbox", "cat", "/work/ready"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}, {Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web"}}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web"}}},
			},
		},
	}
}

func (n *node) waitPod(name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := n.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
	require.NoError(n.t, err)
	var last *corev1.Pod
	if len(list.Items) > 0 {
		last = &list.Items[0]
	}
	if cond(last) {
		return last
	}
	w, err := n.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	require.NoError(n.t, err)
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Deleted:
			last = nil
		case watch.Added, watch.Modified:
			last = ev.Object.(*corev1.Pod)
		default:
			continue
		}
		if cond(last) {
			return last
		}
	}
	n.t.Fatalf("pod %s never got %s; last: %+v", name, what, last)
	return nil
}

func ready(p *corev1.Pod) bool {
	if p == nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exec runs a command in a container of the runtime.
func (n *node) exec(id string, cmd ...string) string {
	n.t.Helper()
	res, err := n.runtime.ExecSync(context.Background(), id, cmd, 10*time.Second)
	require.NoError(n.t, err)
	require.Zero(n.t, res.ExitCode, "%v: %s", cmd, res.Stderr)
	return string(res.Stdout)
}

func TestSeedPodRunsOnTheRealStack(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	_, err := n.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = n.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = n.client.CoreV1().Pods("default").Create(ctx, n.seedPod(), metav1.CreateOptions{})
	require.NoError(t, err)

	p := n.waitPod("web", "Running and Ready", ready)
	assert.Equal(t, n.name, p.Spec.NodeName, "scheduled to the node")
	ip := netip.MustParseAddr(p.Status.PodIP)
	assert.True(t, n.env.PodCIDR.Contains(ip), "pod IP %s in the node's PodCIDR %s", ip, n.env.PodCIDR)
	assert.Equal(t, corev1.PodQOSBurstable, p.Status.QOSClass)
	var appID string
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "app" {
			appID = status.ParseContainerID(cs.ContainerID)
			assert.Contains(t, cs.ImageID, "@sha256:")
		}
	}
	init := p.Status.InitContainerStatuses[0]
	require.NotNil(t, init.State.Terminated)
	assert.Equal(t, "Completed", init.State.Terminated.Reason)

	st, err := n.runtime.ContainerStatus(ctx, appID)
	require.NoError(t, err)
	require.NotZero(t, st.PID)

	// The cgroup: in the Burstable tier, with the memory limit.
	podCgroup := n.tree.PodPath(p)
	assert.Contains(t, podCgroup, "/burstable/pod"+string(p.UID))
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", st.PID))
	require.NoError(t, err)
	assert.Contains(t, string(cg), podCgroup+"/", "the container runs under its pod's cgroup")
	var limit string
	for _, dir := range n.tree.Dirs(podCgroup) {
		for _, f := range []string{"memory.limit_in_bytes", "memory.max"} {
			// The runtime names container cgroups by container ID.
			if b, err := os.ReadFile(filepath.Join(dir, appID, f)); err == nil {
				limit = strings.TrimSpace(string(b))
			}
		}
	}
	assert.Equal(t, "67108864", limit, "the container's memory limit")

	// The rootfs: an overlay with lower, upper and work directories.
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", st.PID))
	require.NoError(t, err)
	var root string
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/" {
			root = line
		}
	}
	require.NotEmpty(t, root, "a root mount")
	assert.Contains(t, root, " - overlay ")
	for _, opt := range []string{"lowerdir=", "upperdir=", "workdir="} {
		assert.Contains(t, root, opt)
	}

	// DNS, volumes.
	resolv := n.exec(appID, "/bin/testbox", "cat", "/etc/resolv.conf")
	assert.Contains(t, resolv, "nameserver 10.96.0.10")
	assert.Contains(t, resolv, "search default.svc.cluster.local svc.cluster.local cluster.local")
	assert.Contains(t, resolv, "options ndots:5")
	assert.Equal(t, "hello", n.exec(appID, "/bin/testbox", "cat", "/cfg/greeting"))
	assert.Equal(t, "s3cret", n.exec(appID, "/bin/testbox", "cat", "/sec/password"))
	assert.Contains(t, n.exec(appID, "/bin/testbox", "cat", "/work/ready"), "yes")
	inside := n.exec(appID, "/bin/testbox", "mounts")
	for _, line := range strings.Split(inside, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/sec" {
			assert.Contains(t, line, " - tmpfs ", "secrets never touch the disk")
		}
	}
	hosts := n.exec(appID, "/bin/testbox", "cat", "/etc/hosts")
	assert.Contains(t, hosts, p.Status.PodIP+"\tweb")

	// Graceful deletion leaves nothing of the pod on the host.
	require.NoError(t, n.client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}))
	n.waitPod("web", "deleted", func(p *corev1.Pod) bool { return p == nil })
	sbs, ctrs, err := n.runtime.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, sbs)
	assert.Empty(t, ctrs)
	for _, d := range n.tree.Dirs(podCgroup) {
		assert.NoDirExists(t, d, "pod cgroup")
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) {
		return !strings.Contains(m.Mountpoint, string(p.UID)) && !strings.HasPrefix(m.Mountpoint, n.root), false
	})
	require.NoError(t, err)
	assert.Empty(t, mounts, "mounts of the pod")
	assert.NoDirExists(t, filepath.Join(n.dir, "kubelet", "pods", string(p.UID)))
	var active []string
	require.NoError(t, n.snaps.Walk(ctx, func(_ context.Context, i overlay.Info) error {
		if i.Kind == overlay.KindActive {
			active = append(active, i.Name)
		}
		return nil
	}))
	assert.Empty(t, active, "container snapshots")
	ents, _ := os.ReadDir(filepath.Join(n.dir, "logs"))
	assert.Empty(t, ents, "pod log directories")
}
