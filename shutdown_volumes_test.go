package podkit

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShutdownUnmountsPodVolumes runs a pod that keeps the API server's
// projected service account token (kube-api-access-*, on a tmpfs), a
// Secret (tmpfs), a memory emptyDir (tmpfs) and a subPath bind mount on a
// secure one-node cluster, then stops and shuts the cluster down with the
// pod running: nothing the kubelet mounted for the pod may be left under
// the data dir or the run dir (podkit up's Ctrl-C must leave a clean host).
func TestShutdownUnmountsPodVolumes(t *testing.T) {
	e := newSvcEnv(t, upstreamDNS(t, "upstream.example.", netip.MustParseAddr("192.0.2.78")), nil)
	t.Cleanup(func() { // even on failure: stop the cluster, then detach what it left
		e.stop()
		left := mountPoints(t, e.dataDir)
		sort.Slice(left, func(i, j int) bool { return len(left[i]) > len(left[j]) })
		for _, p := range left {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	})
	ctx := context.Background()
	require.True(t, strings.HasPrefix(e.c.URL(), "https://"), "secure by default: %s", e.c.URL())

	_, err := e.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "vols"}, Data: map[string][]byte{"key": []byte("value")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p := backend("vols", e.c.Image(svcImage), map[string]string{"app": "vols"})
	p.Spec.AutomountServiceAccountToken = nil // the ServiceAccount plugin adds kube-api-access-*
	mem := resource.MustParse("1Mi")
	p.Spec.Volumes = []corev1.Volume{
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vols"}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &mem}}},
		{Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "secret", MountPath: "/secret"},
		{Name: "mem", MountPath: "/mem"},
		{Name: "disk", MountPath: "/sub", SubPath: "sub"},
	}
	e.createPods(p)
	pod := e.waitReady("vols")["vols"]

	var token string
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			token = v.Name
		}
	}
	require.NotEmpty(t, token, "the ServiceAccount admission plugin added the token volume: %v", pod.Spec.Volumes)
	podDir := filepath.Join(e.node.cfg.DataDir, "kubelet", "pods", string(pod.UID))
	mounted := mountPoints(t, e.dataDir)
	for _, want := range []string{
		filepath.Join(podDir, "volumes", "kubernetes.io~projected", token),
		filepath.Join(podDir, "volumes", "kubernetes.io~secret", "secret"),
		filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "mem"),
		filepath.Join(podDir, "volume-subpaths", "disk", "box", "2"),
	} {
		assert.Contains(t, mounted, want, "mounted while the pod runs")
	}

	disk := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "disk")
	require.NoError(t, os.WriteFile(filepath.Join(disk, "sub", "kept"), []byte("on disk"), 0o644))

	e.stop()
	e.assertClean()
	assert.Empty(t, mountPoints(t, e.dataDir), "no mount left under the data dir")
	assert.NoDirExists(t, filepath.Join(podDir, "volume-subpaths"), "no subPath mount point left")
	for _, dir := range []string{
		filepath.Join(podDir, "volumes", "kubernetes.io~projected", token),
		filepath.Join(podDir, "volumes", "kubernetes.io~secret", "secret"),
	} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "no token or secret on the node's disk: %s", dir)
	}
	b, err := os.ReadFile(filepath.Join(disk, "sub", "kept"))
	require.NoError(t, err)
	assert.Equal(t, "on disk", string(b), "an emptyDir on disk stays for the pod's next run, as across a reboot")
}

// mountPoints lists the mount points at or below dir.
func mountPoints(t *testing.T, dir string) []string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	require.NoError(t, err)
	out := make([]string, 0, len(infos))
	for _, in := range infos {
		out = append(out, in.Mountpoint)
	}
	return out
}
