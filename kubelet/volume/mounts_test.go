package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/sandbox"
)

func TestMountsTranslation(t *testing.T) {
	hostDir := t.TempDir()
	env := newTestManager(t, configMap("cfg", map[string]string{"k": "v"}), secret("sec", map[string]string{"k": "v"}))
	pod := testPod(
		emptyDir("scratch", "", ""),
		cmVolume("config", "cfg"),
		secretVolume("creds", "sec"),
		hostPathVolume("host", hostDir, nil),
	)
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)

	bidi, h2c, none := corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone
	for _, tc := range []struct {
		name       string
		vm         corev1.VolumeMount
		privileged bool
		want       sandbox.Mount
		err        error
		errMsg     string
	}{
		{name: "emptyDir rw", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/data"},
			want: sandbox.Mount{ContainerPath: "/data", HostPath: paths["scratch"], Propagation: sandbox.PropagationPrivate}},
		{name: "emptyDir ro", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/data", ReadOnly: true},
			want: sandbox.Mount{ContainerPath: "/data", HostPath: paths["scratch"], ReadOnly: true, Propagation: sandbox.PropagationPrivate}},
		{name: "configMap always ro", vm: corev1.VolumeMount{Name: "config", MountPath: "/etc/app"},
			want: sandbox.Mount{ContainerPath: "/etc/app", HostPath: paths["config"], ReadOnly: true, Propagation: sandbox.PropagationPrivate}},
		{name: "secret always ro", vm: corev1.VolumeMount{Name: "creds", MountPath: "/secrets"},
			want: sandbox.Mount{ContainerPath: "/secrets", HostPath: paths["creds"], ReadOnly: true, Propagation: sandbox.PropagationPrivate}},
		{name: "hostPath None", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: &none},
			want: sandbox.Mount{ContainerPath: "/host", HostPath: hostDir, Propagation: sandbox.PropagationPrivate}},
		{name: "hostPath HostToContainer", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: &h2c},
			want: sandbox.Mount{ContainerPath: "/host", HostPath: hostDir, Propagation: sandbox.PropagationHostToContainer}},
		{name: "hostPath Bidirectional privileged", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: &bidi}, privileged: true,
			want: sandbox.Mount{ContainerPath: "/host", HostPath: hostDir, Propagation: sandbox.PropagationBidirectional}},
		{name: "Bidirectional unprivileged", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: &bidi},
			err: ErrPropagation, errMsg: "Bidirectional mount propagation is available only to privileged containers"},
		{name: "invalid propagation", vm: corev1.VolumeMount{Name: "host", MountPath: "/host", MountPropagation: ptr.To(corev1.MountPropagationMode("Sideways"))},
			err: ErrPropagation, errMsg: `invalid MountPropagation mode: "Sideways"`},
		{name: "unknown volume", vm: corev1.VolumeMount{Name: "ghost", MountPath: "/g"},
			err: ErrNotSetUp, errMsg: `cannot find volume "ghost" to mount into container "app"`},
		{name: "relative mountPath", vm: corev1.VolumeMount{Name: "scratch", MountPath: "data"},
			errMsg: `mountPath "data" must be an absolute path`},
		{name: "recursiveReadOnly Enabled", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)},
			err: ErrUnsupported, errMsg: "recursiveReadOnly Enabled"},
		{name: "recursiveReadOnly IfPossible", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible)},
			want: sandbox.Mount{ContainerPath: "/d", HostPath: paths["scratch"], ReadOnly: true, Propagation: sandbox.PropagationPrivate}},
		{name: "absolute subPath", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/d", SubPath: "/etc"},
			err: ErrSubPath, errMsg: "error SubPath `/etc` must not be an absolute path"},
		{name: "subPath backstep", vm: corev1.VolumeMount{Name: "scratch", MountPath: "/d", SubPath: "a/../../b"},
			err: ErrSubPath, errMsg: "unable to provision SubPath `a/../../b`: must not contain '..'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pod.Spec.Containers[0].DeepCopy()
			c.VolumeMounts = []corev1.VolumeMount{tc.vm}
			if tc.privileged {
				c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}
			got, err := env.m.Mounts(pod, c, paths)
			if tc.errMsg != "" {
				require.ErrorContains(t, err, tc.errMsg)
				if tc.err != nil {
					assert.True(t, errors.Is(err, tc.err), "%v is %v", err, tc.err)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []sandbox.Mount{tc.want}, got)
		})
	}
}

func TestMountsKeepsOrder(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(emptyDir("a", "", ""), emptyDir("b", "", ""))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "b", MountPath: "/b"}, {Name: "a", MountPath: "/a"}, {Name: "b", MountPath: "/b2", ReadOnly: true},
	}
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	got, err := env.m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"/b", "/a", "/b2"}, []string{got[0].ContainerPath, got[1].ContainerPath, got[2].ContainerPath})
	assert.True(t, got[2].ReadOnly)
}

func TestMountsSubPath(t *testing.T) {
	env := newTestManager(t, configMap("cfg", map[string]string{"app.conf": "x=1"}))
	pod := testPod(emptyDir("scratch", "", ""), cmVolume("config", "cfg"))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/logs", SubPath: "logs/app"},
		{Name: "config", MountPath: "/etc/app.conf", SubPath: "app.conf"},
	}
	got, err := env.m.Mounts(pod, c, paths)
	require.NoError(t, err)
	require.Len(t, got, 2)

	sub := filepath.Join(env.m.podsDir, "uid-1234/volume-subpaths")
	assert.Equal(t, filepath.Join(sub, "scratch/app/0"), got[0].HostPath)
	assert.Equal(t, filepath.Join(sub, "config/app/1"), got[1].HostPath)
	assert.True(t, got[1].ReadOnly)

	// The missing directory was created inside the volume with its mode.
	created := filepath.Join(paths["scratch"], "logs/app")
	assert.Equal(t, os.FileMode(0o777), modeOf(t, created))
	m0, ok := env.mnt.get(got[0].HostPath)
	require.True(t, ok)
	assert.Equal(t, fakeMount{fstype: "bind", source: created}, m0)
	fi, err := os.Stat(got[0].HostPath)
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "a directory target for a directory")

	// The configMap key resolves to the real file of the current version.
	m1, ok := env.mnt.get(got[1].HostPath)
	require.True(t, ok)
	ts, _ := os.Readlink(filepath.Join(paths["config"], "..data"))
	assert.Equal(t, filepath.Join(paths["config"], ts, "app.conf"), m1.source)
	fi, err = os.Stat(got[1].HostPath)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "a file target for a file")
}

func TestMountsSubPathEscapes(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "shadow"), []byte("secret"), 0o600))
	env := newTestManager(t)
	pod := testPod(emptyDir("scratch", "", ""))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	vol := paths["scratch"]
	// What a malicious container could plant in its emptyDir.
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "abs")))
	require.NoError(t, os.Symlink("../../../../../../../..", filepath.Join(vol, "up")))
	require.NoError(t, os.MkdirAll(filepath.Join(vol, "d"), 0o755))
	require.NoError(t, os.Symlink("../..", filepath.Join(vol, "d/up2")))
	require.NoError(t, os.Symlink("/proc/self/root", filepath.Join(vol, "proc")))
	// A symlink that stays inside is fine.
	require.NoError(t, os.Symlink("d", filepath.Join(vol, "inside")))

	for _, sub := range []string{"abs", "abs/shadow", "up", "up/etc", "d/up2", "d/up2/x", "proc/etc", "abs/newdir/deeper"} {
		t.Run(sub, func(t *testing.T) {
			c := pod.Spec.Containers[0].DeepCopy()
			c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: sub}}
			_, err := env.m.Mounts(pod, c, paths)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrSubPath)
			assert.ErrorContains(t, err, "escapes the volume")
		})
	}
	_, err = os.Stat(filepath.Join(outside, "newdir"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing created outside the volume")
	env.mnt.mu.Lock()
	assert.Empty(t, env.mnt.mounts, "no bind mount for an escape")
	env.mnt.mu.Unlock()

	c := pod.Spec.Containers[0].DeepCopy()
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "inside/new"}}
	got, err := env.m.Mounts(pod, c, paths)
	require.NoError(t, err)
	m, _ := env.mnt.get(got[0].HostPath)
	assert.Equal(t, filepath.Join(vol, "d/new"), m.source)
}

func TestMountsSubPathExpr(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(emptyDir("logs", "", ""))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "TIER", Value: "front"},
		{Name: "DIR", Value: "$(TIER)-$(POD_NAME)"},
		{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}

	for _, tc := range []struct{ expr, want, err string }{
		{expr: "$(POD_NAME)", want: "web"},
		{expr: "$(DIR)/x", want: "front-web/x"},
		{expr: "$$(POD_NAME)", want: "$(POD_NAME)"},
		{expr: "$(NOPE)/$(FROM_SECRET)", err: "missing value for FROM_SECRET, NOPE"},
		{expr: "$(TIER)/../..", err: "must not contain '..'"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/logs", SubPathExpr: tc.expr}}
			got, err := env.m.Mounts(pod, c, paths)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.ErrorIs(t, err, ErrSubPath)
				return
			}
			require.NoError(t, err)
			m, _ := env.mnt.get(got[0].HostPath)
			assert.Equal(t, filepath.Join(paths["logs"], tc.want), m.source)
		})
	}
}

func TestMountsSubPathRebinds(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(emptyDir("scratch", "", ""))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "f"}}
	require.NoError(t, os.WriteFile(filepath.Join(paths["scratch"], "f"), nil, 0o644))
	got, err := env.m.Mounts(pod, c, paths)
	require.NoError(t, err)
	fi, err := os.Lstat(got[0].HostPath)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())

	// The file became a directory: the target is replaced to match.
	require.NoError(t, os.Remove(filepath.Join(paths["scratch"], "f")))
	require.NoError(t, os.Mkdir(filepath.Join(paths["scratch"], "f"), 0o755))
	again, err := env.m.Mounts(pod, c, paths)
	require.NoError(t, err)
	assert.Equal(t, got, again)
	fi, err = os.Lstat(got[0].HostPath)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
}
