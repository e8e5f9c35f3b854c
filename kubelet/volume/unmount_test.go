package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// unmountPod has every kind of mount the stage makes: the tmpfs of a
// secret, of a projected token and of a memory emptyDir, and a subPath bind
// mount of an emptyDir on disk.
func unmountPod() *corev1.Pod {
	pod := testPod(secretVolume("sec", "s"), kubeAPIAccessNoCM(), emptyDir("mem", corev1.StorageMediumMemory, ""), emptyDir("disk", "", ""))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "disk", MountPath: "/d", SubPath: "sub"}}
	return pod
}

func TestUnmount(t *testing.T) {
	ctx := context.Background()
	env := newTestManager(t, secret("s", map[string]string{"a": "1"}))
	toks := &forgetTokens{staticTokens: staticTokens{token: "t"}}
	env.m.tokens = toks
	pod := unmountPod()
	paths, err := env.m.Setup(ctx, pod)
	require.NoError(t, err)
	_, err = env.m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(paths["disk"], "sub", "kept"), []byte("on disk"), 0o644))
	env.mnt.mu.Lock()
	require.Len(t, env.mnt.mounts, 4, "3 tmpfs + 1 subPath bind")
	env.mnt.mu.Unlock()

	require.NoError(t, env.m.Unmount(ctx, pod.UID))
	env.mnt.mu.Lock()
	assert.Empty(t, env.mnt.mounts, "nothing mounted")
	env.mnt.mu.Unlock()
	podDir := env.m.podDir(pod.UID)
	assert.NoDirExists(t, filepath.Join(podDir, "volume-subpaths"), "the subPath mount points are removed")
	assert.Equal(t, "on disk", readFile(t, filepath.Join(paths["disk"], "sub", "kept")), "an emptyDir on disk keeps its contents")
	assert.DirExists(t, paths["sec"], "the volumes stay for the pod's next run")
	assert.Empty(t, toks.forgot, "the pod is not gone: its tokens are not forgotten")
	require.NoError(t, env.m.Unmount(ctx, pod.UID), "idempotent")
	require.Error(t, env.m.Unmount(ctx, ".."))

	// The pod runs again: everything is mounted again.
	paths, err = env.m.Setup(ctx, pod)
	require.NoError(t, err)
	_, err = env.m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	env.mnt.mu.Lock()
	assert.Len(t, env.mnt.mounts, 4, "mounted again")
	env.mnt.mu.Unlock()
	require.NoError(t, env.m.Teardown(ctx, pod.UID))
}

func TestUnmountLeavesSubPathsWithMountsLeft(t *testing.T) {
	ctx := context.Background()
	env := newTestManager(t)
	pod := testPod(emptyDir("disk", "", ""))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "disk", MountPath: "/d", SubPath: "sub"}}
	paths, err := env.m.Setup(ctx, pod)
	require.NoError(t, err)
	mounts, err := env.m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	env.mnt.sticky[mounts[0].HostPath] = true

	err = env.m.Unmount(ctx, pod.UID)
	require.ErrorContains(t, err, "mounts remain below")
	assert.DirExists(t, mounts[0].HostPath, "a mount point in use is not removed")
}

func TestUnmountAll(t *testing.T) {
	ctx := context.Background()
	env := newTestManager(t)
	var uids []types.UID
	for _, uid := range []types.UID{"pod-a", "pod-b"} {
		pod := testPod(emptyDir("mem", corev1.StorageMediumMemory, ""))
		pod.UID = uid
		_, err := env.m.Setup(ctx, pod)
		require.NoError(t, err)
		uids = append(uids, uid)
	}
	require.NoError(t, os.WriteFile(filepath.Join(env.dir, "not-a-pod"), nil, 0o644))
	env.mnt.mu.Lock()
	require.Len(t, env.mnt.mounts, len(uids))
	env.mnt.mu.Unlock()

	require.NoError(t, env.m.UnmountAll(ctx))
	env.mnt.mu.Lock()
	assert.Empty(t, env.mnt.mounts)
	env.mnt.mu.Unlock()
	for _, uid := range uids {
		assert.DirExists(t, filepath.Join(env.m.podDir(uid), "volumes", PluginEmptyDir, "mem"))
	}

	// A node that never ran a pod has nothing to unmount.
	require.NoError(t, os.RemoveAll(env.dir))
	require.NoError(t, env.m.UnmountAll(ctx))
}

// TestKernelUnmount: after Unmount no mount of the pod is left in the
// host's mountinfo and no secret or token on the node's disk; Setup brings
// them back.
func TestKernelUnmount(t *testing.T) {
	m, _, base := kernelEnv(t, secret("s", map[string]string{"a": "1"}))
	pod := kernelPod(t, unmountPod().Spec.Volumes...)
	pod.Spec.Containers[0].VolumeMounts = unmountPod().Spec.Containers[0].VolumeMounts
	ctx := context.Background()
	paths, err := m.Setup(ctx, pod)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Teardown(ctx, pod.UID)) })
	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mounts[0].HostPath, "kept"), []byte("on disk"), 0o644))
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(base))
	require.NoError(t, err)
	require.Len(t, infos, 4, "3 tmpfs + 1 subPath bind")

	require.NoError(t, m.UnmountAll(ctx))
	infos, err = mountinfo.GetMounts(mountinfo.PrefixFilter(base))
	require.NoError(t, err)
	assert.Empty(t, mountPoints(infos))
	for _, v := range []string{"sec", "token"} {
		entries, err := os.ReadDir(paths[v])
		require.NoError(t, err)
		assert.Empty(t, entries, "nothing of volume %s on the node's disk", v)
	}
	assert.Equal(t, "on disk", readFile(t, filepath.Join(paths["disk"], "sub", "kept")))

	paths, err = m.Setup(ctx, pod)
	require.NoError(t, err)
	assert.Equal(t, "jwt", readFile(t, filepath.Join(paths["token"], "token")))
	assert.Equal(t, "1", readFile(t, filepath.Join(paths["sec"], "a")))
	assert.Equal(t, "tmpfs", mountAt(t, paths["token"]).FSType)
}
