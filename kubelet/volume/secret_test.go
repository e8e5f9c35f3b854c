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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func secretVolume(name, secret string, mut ...func(*corev1.SecretVolumeSource)) corev1.Volume {
	src := &corev1.SecretVolumeSource{SecretName: secret}
	for _, f := range mut {
		f(src)
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: src}}
}

func TestSecretOnTmpfs(t *testing.T) {
	env := newTestManager(t, secret("creds", map[string]string{"user": "admin", "pass": "s3cret"}))
	paths, err := env.m.Setup(context.Background(), testPod(secretVolume("creds", "creds")))
	require.NoError(t, err)

	dir := paths["creds"]
	assert.Equal(t, filepath.Join(env.m.podsDir, "uid-1234/volumes/kubernetes.io~secret/creds"), dir)
	mnt, ok := env.mnt.get(dir)
	require.True(t, ok, "a secret volume is always a tmpfs")
	assert.Equal(t, fakeMount{fstype: "tmpfs"}, mnt)
	assert.Equal(t, "admin", readFile(t, filepath.Join(dir, "user")))
	assert.Equal(t, "s3cret", readFile(t, filepath.Join(dir, "pass")))
	assert.Equal(t, os.FileMode(0o644), modeOf(t, filepath.Join(dir, "pass")))

	// A second sync neither remounts nor rewrites.
	before := dataDirs(t, dir)
	_, err = env.m.Setup(context.Background(), testPod(secretVolume("creds", "creds")))
	require.NoError(t, err)
	assert.Equal(t, before, dataDirs(t, dir))
}

func TestSecretItemsModes(t *testing.T) {
	env := newTestManager(t, secret("tls", map[string]string{"tls.crt": "CERT", "tls.key": "KEY"}))
	vol := secretVolume("tls", "tls", func(s *corev1.SecretVolumeSource) {
		s.DefaultMode = ptr.To[int32](0o400)
		s.Items = []corev1.KeyToPath{
			{Key: "tls.key", Path: "private/key.pem", Mode: ptr.To[int32](0o600)},
			{Key: "tls.crt", Path: "cert.pem"},
		}
	})
	paths, err := env.m.Setup(context.Background(), testPod(vol))
	require.NoError(t, err)
	dir := paths["tls"]
	assert.Equal(t, "KEY", readFile(t, filepath.Join(dir, "private/key.pem")))
	assert.Equal(t, os.FileMode(0o600), modeOf(t, filepath.Join(dir, "private/key.pem")))
	assert.Equal(t, os.FileMode(0o400), modeOf(t, filepath.Join(dir, "cert.pem")))
}

func TestSecretErrors(t *testing.T) {
	ctx := context.Background()
	env := newTestManager(t, secret("s", map[string]string{"a": "1"}))

	_, err := env.m.Setup(ctx, testPod(secretVolume("v", "missing")))
	require.EqualError(t, err, `MountVolume.SetUp failed for volume "v" : secret "missing" not found`)
	assert.True(t, apierrors.IsNotFound(err))

	_, err = env.m.Setup(ctx, testPod(secretVolume("v", "s", func(s *corev1.SecretVolumeSource) {
		s.Items = []corev1.KeyToPath{{Key: "zz", Path: "zz"}}
	})))
	require.EqualError(t, err, `MountVolume.SetUp failed for volume "v" : references non-existent secret key: zz`)
	assert.True(t, errors.Is(err, ErrKeyNotFound))

	paths, err := env.m.Setup(ctx, testPod(secretVolume("opt", "missing", func(s *corev1.SecretVolumeSource) {
		s.Optional = ptr.To(true)
	})))
	require.NoError(t, err, "a missing optional secret is an empty volume")
	assert.DirExists(t, paths["opt"])
}

func TestSecretUpdatePropagates(t *testing.T) {
	ctx := context.Background()
	env := newTestManager(t, secret("s", map[string]string{"token": "one"}))
	pod := testPod(secretVolume("v", "s"))
	paths, err := env.m.Setup(ctx, pod)
	require.NoError(t, err)
	p := filepath.Join(paths["v"], "token")
	assert.Equal(t, "one", readFile(t, p))

	_, err = env.client.CoreV1().Secrets("default").Update(ctx, secret("s", map[string]string{"token": "two"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = env.m.Setup(ctx, pod)
	require.NoError(t, err)
	assert.Equal(t, "two", readFile(t, p))
	assert.Len(t, dataDirs(t, paths["v"]), 1)
}

func TestSetupContinuesPastFailures(t *testing.T) {
	env := newTestManager(t, configMap("cfg", map[string]string{"a": "1"}))
	pod := testPod(
		secretVolume("bad1", "missing"),
		cmVolume("good", "cfg"),
		corev1.Volume{Name: "bad2", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "x", Path: "/"}}},
	)
	paths, err := env.m.Setup(context.Background(), pod)
	require.Error(t, err)
	assert.Contains(t, paths, "good")
	assert.Len(t, paths, 1)
	assert.ErrorContains(t, err, `volume "bad1" : secret "missing" not found`)
	assert.ErrorContains(t, err, `volume "bad2" : unsupported volume type nfs`)
	assert.ErrorIs(t, err, ErrUnsupported)
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok)
	assert.Len(t, joined.Unwrap(), 2, "one VolumeError per failed volume")
}

func TestUnsupportedVolumeTypes(t *testing.T) {
	for _, tc := range []struct {
		src  corev1.VolumeSource
		name string
	}{
		{corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}, "persistentVolumeClaim"},
		{corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}, "csi"},
		{corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}, "ephemeral"},
		{corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{}}, "iscsi"},
		{corev1.VolumeSource{}, "(none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestManager(t)
			_, err := env.m.Setup(context.Background(), testPod(corev1.Volume{Name: "v", VolumeSource: tc.src}))
			require.ErrorIs(t, err, ErrUnsupported)
			assert.ErrorContains(t, err, "unsupported volume type "+tc.name)
		})
	}
}

func TestSetupRejectsBadNames(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(corev1.Volume{Name: "../x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	_, err := env.m.Setup(context.Background(), pod)
	require.ErrorContains(t, err, "invalid volume name")

	pod = testPod()
	pod.UID = "a/b"
	_, err = env.m.Setup(context.Background(), pod)
	require.ErrorContains(t, err, "invalid UID")
}
