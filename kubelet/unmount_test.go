package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/sandbox"
)

// recordingVolumes is a Volumes stage that records what it is asked.
type recordingVolumes struct {
	torn      []types.UID
	unmounted int
}

func (r *recordingVolumes) Setup(context.Context, *corev1.Pod) (map[string]string, error) {
	return map[string]string{}, nil
}

func (r *recordingVolumes) Mounts(*corev1.Pod, *corev1.Container, map[string]string) ([]sandbox.Mount, error) {
	return nil, nil
}

func (r *recordingVolumes) Teardown(_ context.Context, uid types.UID) error {
	r.torn = append(r.torn, uid)
	return nil
}

// unmountingVolumes is a Volumes stage that is also a VolumeUnmounter.
type unmountingVolumes struct {
	*recordingVolumes
	unmounted int
}

func (u *unmountingVolumes) UnmountAll(context.Context) error {
	u.unmounted++
	return nil
}

func TestUnmountVolumesStages(t *testing.T) {
	for _, tc := range []struct {
		name        string
		unmounter   bool
		wantTorn    []types.UID
		wantUnmount int
	}{
		{name: "a VolumeUnmounter only unmounts", unmounter: true, wantUnmount: 2},
		{name: "another stage tears every pod down", wantTorn: []types.UID{"uid-a", "uid-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := &recordingVolumes{}
			unm := &unmountingVolumes{recordingVolumes: rec}
			e.cfg.Volumes = rec
			if tc.unmounter {
				e.cfg.Volumes = unm
			}
			k, err := kubelet.New(e.cfg)
			require.NoError(t, err)
			require.NoError(t, k.UnmountVolumes(context.Background()), "no pod directory yet")
			assert.Empty(t, rec.torn)
			for _, uid := range []string{"uid-b", "uid-a"} {
				require.NoError(t, os.MkdirAll(filepath.Join(e.cfg.RootDir, "pods", uid), 0o750))
			}
			require.NoError(t, os.WriteFile(filepath.Join(e.cfg.RootDir, "pods", "stray"), nil, 0o644))

			require.NoError(t, k.UnmountVolumes(context.Background()))
			sort.Slice(rec.torn, func(i, j int) bool { return rec.torn[i] < rec.torn[j] })
			assert.Equal(t, tc.wantTorn, rec.torn)
			assert.Equal(t, tc.wantUnmount, unm.unmounted)
		})
	}
}

// TestUnmountVolumes runs a pod with tmpfs volumes (a Secret, a memory
// emptyDir) on the kubelet's own volume stage, stops the kubelet, which
// leaves them mounted for the containers it leaves running, and then
// releases them with UnmountVolumes: nothing stays mounted under the
// kubelet's root, and the pod's volumes stay for its next run.
func TestUnmountVolumes(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	root := e.cfg.RootDir
	t.Cleanup(func() { // after the kubelet stopped, even on failure
		infos, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(root))
		for _, in := range infos {
			_ = unix.Unmount(in.Mountpoint, unix.MNT_DETACH)
		}
	})
	_, err := e.client.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.start()
	pod := e.pod("vols", []string{"sleep", "inf"})
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "sec", MountPath: "/s"}, {Name: "mem", MountPath: "/m"}}
	e.create(pod)
	p := e.waitPod("vols", "Running", running)
	mounted := func() []string {
		infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(root))
		require.NoError(t, err)
		var out []string
		for _, in := range infos {
			out = append(out, in.Mountpoint)
		}
		return out
	}
	require.Len(t, mounted(), 2, "the two tmpfs volumes")

	e.stop()
	assert.Len(t, mounted(), 2, "a stopped kubelet leaves the running pod's volumes mounted")
	require.NoError(t, e.kubelet.UnmountVolumes(context.Background()))
	assert.Empty(t, mounted(), "nothing mounted under the kubelet's root")
	assert.DirExists(t, filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "mem"), "kept for the pod's next run")
}
