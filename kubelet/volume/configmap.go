package volume

import (
	"context"
	"fmt"
	"os"
	"path"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// setupConfigMap projects a ConfigMap into an on-disk directory.
func (m *Manager) setupConfigMap(ctx context.Context, pod *corev1.Pod, name string, src *corev1.ConfigMapVolumeSource) (string, error) {
	optional := src.Optional != nil && *src.Optional
	data, err := m.configMapData(ctx, pod.Namespace, src.Name, optional)
	if err != nil {
		return "", err
	}
	payload, err := keyPayload(src.Items, data, src.DefaultMode, optional, configMapKeyError)
	if err != nil {
		return "", err
	}
	dir := m.volumeDir(pod.UID, PluginConfigMap, name)
	return dir, m.writeVolume(pod, dir, false, payload)
}

// configMapData reads a ConfigMap's data and binaryData as one map. A
// missing ConfigMap reads as empty when optional.
func (m *Manager) configMapData(ctx context.Context, ns, name string, optional bool) (map[string][]byte, error) {
	if m.client == nil {
		return nil, fmt.Errorf("configmap %q: %w", name, ErrNoClient)
	}
	cm, err := m.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && optional:
		return nil, nil
	case apierrors.IsNotFound(err):
		// The kubelet's wording: `configmap "x" not found`.
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
	case err != nil:
		return nil, fmt.Errorf("couldn't get configMap %s/%s: %w", ns, name, err)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, nil
}

func configMapKeyError(key string) error {
	return tagf(ErrKeyNotFound, "configmap references non-existent config key: %s", key)
}

func secretKeyError(key string) error {
	return tagf(ErrKeyNotFound, "references non-existent secret key: %s", key)
}

// keyPayload turns an object's data into files: every key when items is
// empty, otherwise each item's key at its path. A missing key is an error
// unless optional.
func keyPayload(items []corev1.KeyToPath, data map[string][]byte, defaultMode *int32, optional bool, missing func(string) error) (map[string]file, error) {
	dm, err := fileMode(defaultMode, defaultFileMode)
	if err != nil {
		return nil, err
	}
	payload := make(map[string]file, max(len(items), len(data)))
	if len(items) == 0 {
		for k, v := range data {
			payload[k] = file{data: v, mode: dm}
		}
		return payload, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, missing(it.Key)
		}
		mode, err := fileMode(it.Mode, int32(dm))
		if err != nil {
			return nil, err
		}
		payload[path.Clean(it.Path)] = file{data: v, mode: mode}
	}
	return payload, nil
}

// fileMode returns *mode, or def when nil, checked to be a permission mode.
func fileMode(mode *int32, def int32) (os.FileMode, error) {
	v := def
	if mode != nil {
		v = *mode
	}
	if v < 0 || v > 0o777 {
		return 0, fmt.Errorf("invalid file mode %#o: must be between 0 and 0777", v)
	}
	return os.FileMode(v), nil
}
