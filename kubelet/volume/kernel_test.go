package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podkit/podkit/internal/testutil"
)

// kernelEnv is a Manager with the kernel mounter on a fresh PodsDir; every
// mount left below it is detached at cleanup, even if the test failed.
func kernelEnv(t *testing.T, objs ...any) (*Manager, *fake.Clientset, string) {
	t.Helper()
	testutil.RequireRoot(t)
	base := t.TempDir()
	t.Cleanup(func() {
		infos, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(base))
		for _, p := range deepestFirst(mountPoints(infos)) {
			t.Errorf("mount left behind: %s", p)
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	})
	client := fake.NewClientset()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			_, err := client.CoreV1().ConfigMaps(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
			require.NoError(t, err)
		case *corev1.Secret:
			_, err := client.CoreV1().Secrets(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	m, err := New(Config{PodsDir: filepath.Join(base, "pods"), Client: client, Tokens: &staticTokens{token: "jwt"}})
	require.NoError(t, err)
	return m, client, base
}

func mountPoints(infos []*mountinfo.Info) []string {
	out := make([]string, 0, len(infos))
	for _, in := range infos {
		out = append(out, in.Mountpoint)
	}
	return out
}

func kernelPod(t *testing.T, vols ...corev1.Volume) *corev1.Pod {
	pod := testPod(vols...)
	pod.UID = types.UID(fmt.Sprintf("kt-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")))
	return pod
}

// mountAt returns the mount whose mount point is p, or nil.
func mountAt(t *testing.T, p string) *mountinfo.Info {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(p))
	require.NoError(t, err)
	if len(infos) == 0 {
		return nil
	}
	return infos[len(infos)-1]
}

func TestKernelTmpfsVolumes(t *testing.T) {
	m, _, _ := kernelEnv(t,
		secret("sec", map[string]string{"password": "hunter2"}),
		configMap("cfg", map[string]string{"k": "v"}))
	pod := kernelPod(t,
		secretVolume("sec", "sec"),
		emptyDir("mem", corev1.StorageMediumMemory, "8Mi"),
		emptyDir("memdefault", corev1.StorageMediumMemory, ""),
		emptyDir("disk", "", "1Mi"),
		cmVolume("cfg", "cfg"),
		kubeAPIAccessNoCM(),
	)
	ctx := context.Background()
	paths, err := m.Setup(ctx, pod)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Teardown(ctx, pod.UID)) })

	for _, name := range []string{"sec", "mem", "memdefault", "token"} {
		mi := mountAt(t, paths[name])
		require.NotNil(t, mi, "%s is a mount point", name)
		assert.Equal(t, "tmpfs", mi.FSType, name)
	}
	for _, name := range []string{"disk", "cfg"} {
		assert.Nil(t, mountAt(t, paths[name]), "%s lives on disk", name)
	}
	assert.Equal(t, "hunter2", readFile(t, filepath.Join(paths["sec"], "password")))
	assert.Equal(t, "jwt", readFile(t, filepath.Join(paths["token"], "token")))

	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(paths["mem"], &st))
	assert.Equal(t, int64(8<<20), int64(st.Blocks)*st.Bsize, "tmpfs size is the sizeLimit")
	require.NoError(t, unix.Statfs(paths["memdefault"], &st))
	assert.Greater(t, int64(st.Blocks)*st.Bsize, int64(8<<20), "no sizeLimit: the kernel's default size")
	opts := mountAt(t, paths["mem"]).VFSOptions
	assert.Contains(t, opts, "size=8192k")
	if m.mnt.(*kernelMounter).noswap > 0 {
		assert.Contains(t, opts, "noswap", "secrets stay out of swap")
	}

	// Setup again does not stack a second tmpfs.
	_, err = m.Setup(ctx, pod)
	require.NoError(t, err)
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(paths["sec"]))
	require.NoError(t, err)
	assert.Len(t, infos, 1)

	usage, err := m.Usage(pod.UID)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(paths["mem"], "blob"), make([]byte, 1<<20), 0o600))
	after, err := m.Usage(pod.UID)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after["mem"]-usage["mem"], int64(1<<20), "tmpfs usage counted")
}

func TestKernelTeardownLeavesNoMounts(t *testing.T) {
	hostDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(hostDir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "data/precious"), []byte("keep"), 0o644))
	m, _, base := kernelEnv(t, secret("sec", map[string]string{"a": "1"}))
	pod := kernelPod(t, secretVolume("sec", "sec"), emptyDir("mem", corev1.StorageMediumMemory, "1Mi"),
		hostPathVolume("host", hostDir, nil), emptyDir("disk", "", ""))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "host", MountPath: "/h", SubPath: "data"},
		{Name: "sec", MountPath: "/s/a", SubPath: "a"},
		{Name: "mem", MountPath: "/m", SubPath: "x/y"},
		{Name: "disk", MountPath: "/d", SubPath: "z"},
	}
	ctx := context.Background()
	paths, err := m.Setup(ctx, pod)
	require.NoError(t, err)
	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	require.Len(t, mounts, 4)
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(base))
	require.NoError(t, err)
	assert.Len(t, infos, 6, "2 tmpfs + 4 subPath binds")

	require.NoError(t, m.Teardown(ctx, pod.UID))
	infos, err = mountinfo.GetMounts(mountinfo.PrefixFilter(base))
	require.NoError(t, err)
	assert.Empty(t, mountPoints(infos))
	assert.NoDirExists(t, filepath.Join(m.podDir(pod.UID), "volumes"))
	assert.NoDirExists(t, filepath.Join(m.podDir(pod.UID), "volume-subpaths"))
	assert.Equal(t, "keep", readFile(t, filepath.Join(hostDir, "data/precious")), "the hostPath behind a subPath is untouched")
	require.NoError(t, m.Teardown(ctx, pod.UID))
}

func TestKernelSubPath(t *testing.T) {
	m, client, _ := kernelEnv(t, configMap("cfg", map[string]string{"app.conf": "v1"}))
	pod := kernelPod(t, emptyDir("scratch", "", ""), cmVolume("cfg", "cfg"))
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/work", SubPath: "w"},
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "cfg", MountPath: "/etc/app"},
	}
	ctx := context.Background()
	paths, err := m.Setup(ctx, pod)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Teardown(ctx, pod.UID)) })
	mounts, err := m.Mounts(pod, c, paths)
	require.NoError(t, err)

	// The bind mount is the volume's directory: writes on one side show on
	// the other.
	require.NoError(t, os.WriteFile(filepath.Join(mounts[0].HostPath, "out"), []byte("hi"), 0o644))
	assert.Equal(t, "hi", readFile(t, filepath.Join(paths["scratch"], "w/out")))
	assert.Equal(t, "v1", readFile(t, mounts[1].HostPath))

	// A restart reuses the bind mounts.
	again, err := m.Mounts(pod, c, paths)
	require.NoError(t, err)
	assert.Equal(t, mounts, again)
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mounts[1].HostPath))
	require.NoError(t, err)
	assert.Len(t, infos, 1, "not mounted twice")

	// A configMap update reaches the whole-volume mount, not the subPath
	// snapshot, until the container is restarted (Mounts again).
	_, err = client.CoreV1().ConfigMaps("default").Update(ctx, configMap("cfg", map[string]string{"app.conf": "v2"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = m.Setup(ctx, pod)
	require.NoError(t, err)
	assert.Equal(t, "v2", readFile(t, filepath.Join(mounts[2].HostPath, "app.conf")))
	assert.Equal(t, "v1", readFile(t, mounts[1].HostPath))
	_, err = m.Mounts(pod, c, paths)
	require.NoError(t, err)
	assert.Equal(t, "v2", readFile(t, mounts[1].HostPath))
	infos, err = mountinfo.GetMounts(mountinfo.SingleEntryFilter(mounts[1].HostPath))
	require.NoError(t, err)
	assert.Len(t, infos, 1, "the stale bind mount was replaced")

	// Escapes are refused by the kernel's resolution, not a string check.
	require.NoError(t, os.Symlink("/etc", filepath.Join(paths["scratch"], "evil")))
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "evil/passwd"}}
	_, err = m.Mounts(pod, c, paths)
	require.ErrorIs(t, err, ErrSubPath)
	assert.ErrorContains(t, err, "escapes the volume")
}
