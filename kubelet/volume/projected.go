package volume

import (
	"context"
	"fmt"
	"os"
	"path"

	corev1 "k8s.io/api/core/v1"
)

// tokenFileMode is a projected token's mode when the volume sets no
// defaultMode, or when the pod has an fsUser or fsGroup (the kubelet's rule).
const tokenFileMode os.FileMode = 0o600

// setupProjected combines its sources into one directory on its own tmpfs
// (it usually holds a token and secrets). Later sources win on conflicting
// paths, which API validation normally rules out.
func (m *Manager) setupProjected(ctx context.Context, pod *corev1.Pod, name string, src *corev1.ProjectedVolumeSource) (string, error) {
	dm, err := fileMode(src.DefaultMode, defaultFileMode)
	if err != nil {
		return "", err
	}
	dmode := int32(dm)
	payload := map[string]file{}
	add := func(p map[string]file) {
		for k, v := range p {
			payload[k] = v
		}
	}
	for i := range src.Sources {
		s := &src.Sources[i]
		switch {
		case s.ConfigMap != nil:
			optional := s.ConfigMap.Optional != nil && *s.ConfigMap.Optional
			data, err := m.configMapData(ctx, pod.Namespace, s.ConfigMap.Name, optional)
			if err != nil {
				return "", err
			}
			p, err := keyPayload(s.ConfigMap.Items, data, &dmode, optional, configMapKeyError)
			if err != nil {
				return "", err
			}
			add(p)
		case s.Secret != nil:
			optional := s.Secret.Optional != nil && *s.Secret.Optional
			data, err := m.secretData(ctx, pod.Namespace, s.Secret.Name, optional)
			if err != nil {
				return "", err
			}
			p, err := keyPayload(s.Secret.Items, data, &dmode, optional, secretKeyError)
			if err != nil {
				return "", err
			}
			add(p)
		case s.DownwardAPI != nil:
			p, err := m.downwardPayload(pod, s.DownwardAPI.Items, &dmode)
			if err != nil {
				return "", err
			}
			add(p)
		case s.ServiceAccountToken != nil:
			p, f, err := m.tokenFile(ctx, pod, s.ServiceAccountToken, src.DefaultMode)
			if err != nil {
				return "", err
			}
			payload[p] = f
		case s.ClusterTrustBundle != nil:
			return "", tagf(ErrUnsupported, "unsupported projected volume source clusterTrustBundle")
		case s.PodCertificate != nil:
			return "", tagf(ErrUnsupported, "unsupported projected volume source podCertificate")
		default:
			return "", fmt.Errorf("projected volume source %d is empty", i)
		}
	}
	dir := m.volumeDir(pod.UID, PluginProjected, name)
	return dir, m.writeVolume(pod, dir, true, payload)
}

// tokenFile asks the TokenSource for a token and returns its path and file.
func (m *Manager) tokenFile(ctx context.Context, pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection, defaultMode *int32) (string, file, error) {
	if m.tokens == nil {
		return "", file{}, fmt.Errorf("serviceAccountToken %q: %w", tp.Path, ErrNoTokenSource)
	}
	tok, _, err := m.tokens.Token(ctx, pod, tp)
	if err != nil {
		return "", file{}, err
	}
	f := file{data: []byte(tok), mode: tokenFileMode}
	if defaultMode != nil {
		f.mode = os.FileMode(*defaultMode)
	}
	uid := fsUser(pod)
	if uid != nil || fsGroup(pod) != nil {
		// Readable by the pod's user (owner) or its fsGroup (group, the
		// group bits are added with the fsGroup), nobody else.
		f.mode = tokenFileMode
		f.uid = uid
	}
	return path.Clean(tp.Path), f, nil
}
