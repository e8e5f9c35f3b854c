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

func cmVolume(name, cm string, mut ...func(*corev1.ConfigMapVolumeSource)) corev1.Volume {
	src := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}
	for _, f := range mut {
		f(src)
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: src}}
}

func TestConfigMapAllKeys(t *testing.T) {
	cm := configMap("cfg", map[string]string{"a.conf": "alpha", "b": "beta"})
	cm.BinaryData = map[string][]byte{"bin": {0, 1, 2}}
	env := newTestManager(t, cm)
	paths, err := env.m.Setup(context.Background(), testPod(cmVolume("config", "cfg")))
	require.NoError(t, err)

	dir := paths["config"]
	assert.Equal(t, filepath.Join(env.m.podsDir, "uid-1234/volumes/kubernetes.io~configmap/config"), dir)
	assert.Equal(t, "alpha", readFile(t, filepath.Join(dir, "a.conf")))
	assert.Equal(t, "beta", readFile(t, filepath.Join(dir, "b")))
	assert.Equal(t, "\x00\x01\x02", readFile(t, filepath.Join(dir, "bin")))
	assert.Equal(t, os.FileMode(0o644), modeOf(t, filepath.Join(dir, "b")), "defaultMode defaults to 0644")
	assert.Equal(t, os.FileMode(0o777), modeOf(t, dir))
	target, err := os.Readlink(filepath.Join(dir, "a.conf"))
	require.NoError(t, err)
	assert.Equal(t, "..data/a.conf", target)
	_, mounted := env.mnt.get(dir)
	assert.False(t, mounted, "configMap volumes live on disk")
}

func TestConfigMapItemsAndModes(t *testing.T) {
	env := newTestManager(t, configMap("cfg", map[string]string{"a": "1", "b": "2", "c": "3"}))
	vol := cmVolume("config", "cfg", func(s *corev1.ConfigMapVolumeSource) {
		s.DefaultMode = ptr.To[int32](0o440)
		s.Items = []corev1.KeyToPath{
			{Key: "a", Path: "etc/a.txt"},
			{Key: "b", Path: "b.sh", Mode: ptr.To[int32](0o755)},
		}
	})
	paths, err := env.m.Setup(context.Background(), testPod(vol))
	require.NoError(t, err)
	dir := paths["config"]
	assert.Equal(t, "1", readFile(t, filepath.Join(dir, "etc/a.txt")))
	assert.Equal(t, os.FileMode(0o440), modeOf(t, filepath.Join(dir, "etc/a.txt")))
	assert.Equal(t, os.FileMode(0o755), modeOf(t, filepath.Join(dir, "b.sh")))
	_, err = os.Lstat(filepath.Join(dir, "c"))
	assert.ErrorIs(t, err, os.ErrNotExist, "only the listed items are projected")
}

func TestConfigMapErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vol     corev1.Volume
		wantErr string
		is      func(error) bool
		files   []string // files present after an optional setup
	}{
		{
			name:    "missing configmap",
			vol:     cmVolume("config", "nope"),
			wantErr: `MountVolume.SetUp failed for volume "config" : configmap "nope" not found`,
			is:      apierrors.IsNotFound,
		},
		{
			name:  "missing optional configmap",
			vol:   cmVolume("config", "nope", func(s *corev1.ConfigMapVolumeSource) { s.Optional = ptr.To(true) }),
			files: []string{},
		},
		{
			name: "missing key",
			vol: cmVolume("config", "cfg", func(s *corev1.ConfigMapVolumeSource) {
				s.Items = []corev1.KeyToPath{{Key: "y", Path: "y"}}
			}),
			wantErr: `MountVolume.SetUp failed for volume "config" : configmap references non-existent config key: y`,
			is:      func(err error) bool { return errors.Is(err, ErrKeyNotFound) },
		},
		{
			name: "missing key of optional configmap",
			vol: cmVolume("config", "cfg", func(s *corev1.ConfigMapVolumeSource) {
				s.Optional = ptr.To(true)
				s.Items = []corev1.KeyToPath{{Key: "y", Path: "y"}, {Key: "x", Path: "x"}}
			}),
			files: []string{"x"},
		},
		{
			name: "invalid mode",
			vol: cmVolume("config", "cfg", func(s *corev1.ConfigMapVolumeSource) {
				s.DefaultMode = ptr.To[int32](0o1777)
			}),
			wantErr: "invalid file mode",
		},
		{
			name: "escaping item path",
			vol: cmVolume("config", "cfg", func(s *corev1.ConfigMapVolumeSource) {
				s.Items = []corev1.KeyToPath{{Key: "x", Path: "../x"}}
			}),
			wantErr: "must not contain '..'",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestManager(t, configMap("cfg", map[string]string{"x": "1"}))
			paths, err := env.m.Setup(context.Background(), testPod(tc.vol))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				var ve *VolumeError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, "config", ve.Volume)
				if tc.is != nil {
					assert.True(t, tc.is(err), "error %v has the expected kind", err)
				}
				assert.NotContains(t, paths, "config")
				return
			}
			require.NoError(t, err)
			var names []string
			entries, err := os.ReadDir(paths["config"])
			require.NoError(t, err)
			for _, e := range entries {
				if e.Name()[0] != '.' {
					names = append(names, e.Name())
				}
			}
			assert.ElementsMatch(t, tc.files, names)
		})
	}
}

func TestConfigMapUpdatePropagates(t *testing.T) {
	ctx := context.Background()
	env := newTestManager(t, configMap("cfg", map[string]string{"greeting": "hello", "old": "x"}))
	pod := testPod(cmVolume("config", "cfg"))
	paths, err := env.m.Setup(ctx, pod)
	require.NoError(t, err)
	mounted := filepath.Join(paths["config"], "greeting") // what a container sees
	assert.Equal(t, "hello", readFile(t, mounted))
	before := dataDirs(t, paths["config"])
	require.Len(t, before, 1)

	_, err = env.client.CoreV1().ConfigMaps("default").Update(ctx,
		configMap("cfg", map[string]string{"greeting": "bonjour", "new": "y"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	env.clock.advance(61e9)
	again, err := env.m.Setup(ctx, pod)
	require.NoError(t, err)
	assert.Equal(t, paths, again, "same host paths")

	assert.Equal(t, "bonjour", readFile(t, mounted), "the same path shows the new content")
	assert.Equal(t, "y", readFile(t, filepath.Join(paths["config"], "new")))
	_, err = os.Lstat(filepath.Join(paths["config"], "old"))
	assert.ErrorIs(t, err, os.ErrNotExist, "removed keys disappear")
	after := dataDirs(t, paths["config"])
	require.Len(t, after, 1)
	assert.NotEqual(t, before, after, "the old timestamped directory is removed")
}

func TestConfigMapNoClient(t *testing.T) {
	m, err := New(Config{PodsDir: t.TempDir()})
	require.NoError(t, err)
	m.mnt = newFakeMounter()
	_, err = m.Setup(context.Background(), testPod(cmVolume("config", "cfg")))
	require.ErrorIs(t, err, ErrNoClient)
}
