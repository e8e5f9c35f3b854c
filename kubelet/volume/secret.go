package volume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// setupSecret projects a Secret into a directory on its own tmpfs.
func (m *Manager) setupSecret(ctx context.Context, pod *corev1.Pod, name string, src *corev1.SecretVolumeSource) (string, error) {
	optional := src.Optional != nil && *src.Optional
	data, err := m.secretData(ctx, pod.Namespace, src.SecretName, optional)
	if err != nil {
		return "", err
	}
	payload, err := keyPayload(src.Items, data, src.DefaultMode, optional, secretKeyError)
	if err != nil {
		return "", err
	}
	dir := m.volumeDir(pod.UID, PluginSecret, name)
	return dir, m.writeVolume(pod, dir, true, payload)
}

// secretData reads a Secret's data. A missing Secret reads as empty when
// optional.
func (m *Manager) secretData(ctx context.Context, ns, name string, optional bool) (map[string][]byte, error) {
	if m.client == nil {
		return nil, fmt.Errorf("secret %q: %w", name, ErrNoClient)
	}
	s, err := m.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && optional:
		return nil, nil
	case apierrors.IsNotFound(err):
		// The kubelet's wording: `secret "x" not found`.
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
	case err != nil:
		return nil, fmt.Errorf("couldn't get secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}
