package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/internal/testutil"
)

// kubeAPIAccess is the projected volume the ServiceAccount admission plugin
// adds to every pod.
func kubeAPIAccess(defaultMode *int32) corev1.Volume {
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: defaultMode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{fieldItem("namespace", "metadata.namespace")}}},
		},
	}}}
}

// staticTokens is a TokenSource that records the projections asked for.
type staticTokens struct {
	token string
	asked []*corev1.ServiceAccountTokenProjection
}

func (s *staticTokens) Token(_ context.Context, _ *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, time.Time, error) {
	s.asked = append(s.asked, p)
	return s.token, time.Time{}, nil
}

func TestProjectedKubeAPIAccess(t *testing.T) {
	env := newTestManager(t, configMap("kube-root-ca.crt", map[string]string{"ca.crt": "CA"}))
	toks := &staticTokens{token: "jwt"}
	env.m.tokens = toks

	paths, err := env.m.Setup(context.Background(), testPod(kubeAPIAccess(nil)))
	require.NoError(t, err)
	dir := paths["kube-api-access"]
	assert.Equal(t, filepath.Join(env.m.podsDir, "uid-1234/volumes/kubernetes.io~projected/kube-api-access"), dir)
	mnt, ok := env.mnt.get(dir)
	require.True(t, ok, "projected volumes are on tmpfs")
	assert.Equal(t, "tmpfs", mnt.fstype)

	assert.Equal(t, "jwt", readFile(t, filepath.Join(dir, "token")))
	assert.Equal(t, os.FileMode(0o600), modeOf(t, filepath.Join(dir, "token")), "token without defaultMode: 0600")
	assert.Equal(t, "CA", readFile(t, filepath.Join(dir, "ca.crt")))
	assert.Equal(t, os.FileMode(0o644), modeOf(t, filepath.Join(dir, "ca.crt")))
	assert.Equal(t, "default", readFile(t, filepath.Join(dir, "namespace")))
	require.Len(t, toks.asked, 1)
	assert.Equal(t, int64(3607), *toks.asked[0].ExpirationSeconds)

	// A renewed token reaches the same path on the next sync.
	toks.token = "jwt2"
	_, err = env.m.Setup(context.Background(), testPod(kubeAPIAccess(nil)))
	require.NoError(t, err)
	assert.Equal(t, "jwt2", readFile(t, filepath.Join(dir, "token")))
	assert.Len(t, dataDirs(t, dir), 1)
}

func TestProjectedModes(t *testing.T) {
	for _, tc := range []struct {
		name               string
		defaultMode        *int32
		sc                 *corev1.PodSecurityContext
		token, ca          os.FileMode
		tokenUID, tokenGID int64 // -1: not checked
	}{
		{name: "defaultMode 0644 (API default)", defaultMode: ptr.To[int32](0o644), token: 0o644, ca: 0o644, tokenUID: -1, tokenGID: -1},
		{name: "defaultMode 0400", defaultMode: ptr.To[int32](0o400), token: 0o400, ca: 0o400, tokenUID: -1, tokenGID: -1},
		{name: "runAsUser: token owned by the user, 0600", defaultMode: ptr.To[int32](0o644),
			sc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, token: 0o600, ca: 0o644, tokenUID: 1000, tokenGID: -1},
		{name: "fsGroup: token 0640 for the group", defaultMode: ptr.To[int32](0o644),
			sc: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}, token: 0o640, ca: 0o644, tokenUID: 0, tokenGID: 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tokenUID > 0 || tc.tokenGID > 0 {
				testutil.RequireRoot(t) // chown
			}
			env := newTestManager(t, configMap("kube-root-ca.crt", map[string]string{"ca.crt": "CA"}))
			env.m.tokens = &staticTokens{token: "jwt"}
			pod := testPod(kubeAPIAccess(tc.defaultMode))
			pod.Spec.SecurityContext = tc.sc
			paths, err := env.m.Setup(context.Background(), pod)
			require.NoError(t, err)
			dir := paths["kube-api-access"]
			assert.Equal(t, tc.token, modeOf(t, filepath.Join(dir, "token")))
			assert.Equal(t, tc.ca, modeOf(t, filepath.Join(dir, "ca.crt")))
			fi, err := os.Stat(filepath.Join(dir, "token"))
			require.NoError(t, err)
			st := fi.Sys().(*syscall.Stat_t)
			if tc.tokenUID >= 0 {
				assert.Equal(t, uint32(tc.tokenUID), st.Uid)
			}
			if tc.tokenGID >= 0 {
				assert.Equal(t, uint32(tc.tokenGID), st.Gid)
			}
			// Nothing changes on the next sync: modes and owners compare equal.
			before := dataDirs(t, dir)
			_, err = env.m.Setup(context.Background(), pod)
			require.NoError(t, err)
			assert.Equal(t, before, dataDirs(t, dir))
		})
	}
}

func TestProjectedSources(t *testing.T) {
	env := newTestManager(t,
		configMap("cfg", map[string]string{"a": "1"}),
		secret("sec", map[string]string{"b": "2", "c": "3"}),
	)
	vol := corev1.Volume{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o440),
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"},
				Items: []corev1.KeyToPath{{Key: "c", Path: "sub/c", Mode: ptr.To[int32](0o400)}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Optional: ptr.To(true),
				Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}}}},
		},
	}}}
	paths, err := env.m.Setup(context.Background(), testPod(vol))
	require.NoError(t, err)
	dir := paths["all"]
	assert.Equal(t, "1", readFile(t, filepath.Join(dir, "a")))
	assert.Equal(t, os.FileMode(0o440), modeOf(t, filepath.Join(dir, "a")))
	assert.Equal(t, "3", readFile(t, filepath.Join(dir, "sub/c")))
	assert.Equal(t, os.FileMode(0o400), modeOf(t, filepath.Join(dir, "sub/c")))
	for _, p := range []string{"b", "zz"} {
		_, err := os.Lstat(filepath.Join(dir, p))
		assert.ErrorIs(t, err, os.ErrNotExist, p)
	}
}

func TestProjectedErrors(t *testing.T) {
	proj := func(s corev1.VolumeProjection) *corev1.Pod {
		return testPod(corev1.Volume{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{s}}}})
	}
	for _, tc := range []struct {
		name string
		src  corev1.VolumeProjection
		err  string
		is   error
	}{
		{"no token source", corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			`serviceAccountToken "token": no service account token source configured`, ErrNoTokenSource},
		{"missing configmap", corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}},
			`configmap "x" not found`, nil},
		{"missing secret key", corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"},
			Items: []corev1.KeyToPath{{Key: "nope", Path: "n"}}}}, "references non-existent secret key: nope", ErrKeyNotFound},
		{"cluster trust bundle", corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "b"}},
			"unsupported projected volume source clusterTrustBundle", ErrUnsupported},
		{"empty source", corev1.VolumeProjection{}, "projected volume source 0 is empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestManager(t, secret("sec", map[string]string{"a": "1"}))
			_, err := env.m.Setup(context.Background(), proj(tc.src))
			require.ErrorContains(t, err, tc.err)
			if tc.is != nil {
				assert.True(t, errors.Is(err, tc.is))
			}
		})
	}
}

func TestProjectedTokenError(t *testing.T) {
	env := newTestManager(t)
	env.m.tokens = TokenSourceFunc(func(context.Context, *corev1.Pod, *corev1.ServiceAccountTokenProjection) (string, time.Time, error) {
		return "", time.Time{}, errors.New("serviceaccounts \"default\" not found")
	})
	_, err := env.m.Setup(context.Background(), testPod(kubeAPIAccess(nil)))
	require.EqualError(t, err, `MountVolume.SetUp failed for volume "kube-api-access" : serviceaccounts "default" not found`)
}
