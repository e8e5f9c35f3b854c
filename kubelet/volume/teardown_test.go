package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type forgetTokens struct {
	staticTokens
	forgot []types.UID
}

func (f *forgetTokens) Forget(uid types.UID) { f.forgot = append(f.forgot, uid) }

func TestTeardown(t *testing.T) {
	ctx := context.Background()
	hostDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "precious"), []byte("x"), 0o644))
	env := newTestManager(t, secret("s", map[string]string{"a": "1"}))
	toks := &forgetTokens{staticTokens: staticTokens{token: "t"}}
	env.m.tokens = toks
	pod := testPod(emptyDir("mem", corev1.StorageMediumMemory, ""), secretVolume("sec", "s"), hostPathVolume("host", hostDir, nil), kubeAPIAccessNoCM())
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/h", SubPath: "sub"}}
	paths, err := env.m.Setup(ctx, pod)
	require.NoError(t, err)
	_, err = env.m.Mounts(pod, &pod.Spec.Containers[0], paths)
	require.NoError(t, err)
	// A pod dir entry the kubelet owns stays.
	podDir := filepath.Join(env.m.podsDir, string(pod.UID))
	require.NoError(t, os.WriteFile(filepath.Join(podDir, "etc-hosts"), nil, 0o644))
	env.mnt.mu.Lock()
	require.Len(t, env.mnt.mounts, 4, "3 tmpfs + 1 subPath bind")
	env.mnt.mu.Unlock()

	require.NoError(t, env.m.Teardown(ctx, pod.UID))
	env.mnt.mu.Lock()
	assert.Empty(t, env.mnt.mounts)
	env.mnt.mu.Unlock()
	assert.NoDirExists(t, filepath.Join(podDir, "volumes"))
	assert.NoDirExists(t, filepath.Join(podDir, "volume-subpaths"))
	assert.FileExists(t, filepath.Join(podDir, "etc-hosts"))
	assert.FileExists(t, filepath.Join(hostDir, "precious"), "hostPath contents untouched")
	assert.DirExists(t, filepath.Join(hostDir, "sub"))
	assert.Equal(t, []types.UID{pod.UID}, toks.forgot)

	// Idempotent, also for a pod never set up.
	require.NoError(t, env.m.Teardown(ctx, pod.UID))
	require.NoError(t, env.m.Teardown(ctx, "never-seen"))
	require.Error(t, env.m.Teardown(ctx, ".."))
}

func TestTeardownRefusesWithMountsLeft(t *testing.T) {
	env := newTestManager(t)
	pod := testPod(emptyDir("mem", corev1.StorageMediumMemory, ""))
	paths, err := env.m.Setup(context.Background(), pod)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(paths["mem"], "f"), nil, 0o644))
	env.mnt.sticky[paths["mem"]] = true

	err = env.m.Teardown(context.Background(), pod.UID)
	require.ErrorContains(t, err, "mounts remain below")
	assert.FileExists(t, filepath.Join(paths["mem"], "f"), "nothing removed while a mount is left")
}

// kubeAPIAccessNoCM is a projected volume with only a token.
func kubeAPIAccessNoCM() corev1.Volume {
	return corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
	}}}
}

func TestConcurrentPods(t *testing.T) {
	env := newTestManager(t, configMap("cfg", map[string]string{"a": "1"}))
	ctx := context.Background()
	done := make(chan error)
	for i := range 8 {
		go func() {
			pod := testPod(cmVolume("c", "cfg"), emptyDir("e", "", ""))
			pod.UID = types.UID("pod-" + string(rune('a'+i)))
			var err error
			for range 5 {
				if _, err = env.m.Setup(ctx, pod); err != nil {
					break
				}
				env.clock.advance(time.Second)
			}
			if err == nil {
				err = env.m.Teardown(ctx, pod.UID)
			}
			done <- err
		}()
	}
	for range 8 {
		require.NoError(t, <-done)
	}
	env.m.mu.Lock()
	assert.Empty(t, env.m.locks, "per-pod locks are released")
	env.m.mu.Unlock()
}
