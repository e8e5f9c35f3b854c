package volume

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/internal/testutil"
)

func emptyDir(name string, medium corev1.StorageMedium, size string) corev1.Volume {
	src := &corev1.EmptyDirVolumeSource{Medium: medium}
	if size != "" {
		src.SizeLimit = ptr.To(resource.MustParse(size))
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: src}}
}

func TestEmptyDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vol    corev1.Volume
		mount  *fakeMount
		errMsg string
	}{
		{name: "disk", vol: emptyDir("scratch", "", "")},
		{name: "disk with sizeLimit (eviction, no mount)", vol: emptyDir("scratch", "", "1Gi")},
		{name: "memory", vol: emptyDir("scratch", corev1.StorageMediumMemory, ""), mount: &fakeMount{fstype: "tmpfs"}},
		{name: "memory with sizeLimit", vol: emptyDir("scratch", corev1.StorageMediumMemory, "64Mi"), mount: &fakeMount{fstype: "tmpfs", size: 64 << 20}},
		{name: "memory with decimal sizeLimit", vol: emptyDir("scratch", corev1.StorageMediumMemory, "1G"), mount: &fakeMount{fstype: "tmpfs", size: 1e9}},
		{name: "hugepages", vol: emptyDir("scratch", corev1.StorageMediumHugePages, ""), errMsg: `unsupported emptyDir medium "HugePages"`},
		{name: "unknown medium", vol: emptyDir("scratch", "Tape", ""), errMsg: `unsupported emptyDir medium "Tape"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestManager(t)
			paths, err := env.m.Setup(context.Background(), testPod(tc.vol))
			if tc.errMsg != "" {
				require.ErrorContains(t, err, tc.errMsg)
				require.ErrorIs(t, err, ErrUnsupported)
				return
			}
			require.NoError(t, err)
			dir := paths["scratch"]
			assert.Equal(t, filepath.Join(env.m.podsDir, "uid-1234/volumes/kubernetes.io~empty-dir/scratch"), dir)
			assert.Equal(t, os.FileMode(0o777), modeOf(t, dir))
			got, mounted := env.mnt.get(dir)
			if tc.mount == nil {
				assert.False(t, mounted)
				return
			}
			require.True(t, mounted)
			assert.Equal(t, *tc.mount, got)
		})
	}
}

func TestEmptyDirIdempotent(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(emptyDir("mem", corev1.StorageMediumMemory, "1Mi"), emptyDir("disk", "", ""))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(paths["disk"], "data"), []byte("keep me"), 0o600))
	// A tmpfs mounted once; a second Setup sees it and does not mount again.
	env.mnt.mounts[paths["mem"]] = fakeMount{fstype: "tmpfs", size: -1}

	again, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	assert.Equal(t, paths, again)
	assert.Equal(t, "keep me", readFile(t, filepath.Join(paths["disk"], "data")))
	got, _ := env.mnt.get(paths["mem"])
	assert.Equal(t, int64(-1), got.size, "not mounted twice")
}

func TestEmptyDirFSGroup(t *testing.T) {
	testutil.RequireRoot(t) // chown
	env := newTestManager(t)
	pod := testPod(emptyDir("scratch", "", ""))
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](4321)}
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	fi, err := os.Stat(paths["scratch"])
	require.NoError(t, err)
	assert.Equal(t, uint32(4321), fi.Sys().(*syscall.Stat_t).Gid)
	assert.NotZero(t, fi.Mode()&os.ModeSetgid, "setgid so new files get the group")
	assert.Equal(t, os.FileMode(0o777), fi.Mode().Perm())
}

func TestUsage(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(emptyDir("a", "", ""), emptyDir("b", "", ""), cmVolume("c", "none", func(s *corev1.ConfigMapVolumeSource) { s.Optional = ptr.To(true) }))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)

	empty, err := env.m.Usage(pod.UID)
	require.NoError(t, err)
	require.Len(t, empty, 2, "emptyDir volumes only")

	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i) | 1 // not sparse
	}
	require.NoError(t, os.WriteFile(filepath.Join(paths["a"], "f"), big, 0o600))
	require.NoError(t, os.Link(filepath.Join(paths["a"], "f"), filepath.Join(paths["a"], "hardlink")))
	require.NoError(t, os.MkdirAll(filepath.Join(paths["b"], "x/y"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(paths["b"], "x/y/z"), big[:4096], 0o600))

	usage, err := env.m.Usage(pod.UID)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, usage["a"]-empty["a"], int64(1<<20))
	assert.Less(t, usage["a"]-empty["a"], int64(2<<20), "a hard link counts once")
	assert.GreaterOrEqual(t, usage["b"]-empty["b"], int64(4096))

	none, err := env.m.Usage("other-pod")
	require.NoError(t, err)
	assert.Empty(t, none)
}
