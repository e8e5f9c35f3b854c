package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/kubelet"
)

const staticManifest = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: registry.test/testbox:1
    args: [sleep, inf]
`

func TestStaticPodWithMirror(t *testing.T) {
	dir := t.TempDir()
	interval := 5 * time.Second
	e := newEnv(t, func(c *kubelet.Config) { c.StaticPodDir = dir; c.StaticPodInterval = interval })
	manifest := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(staticManifest), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".hidden.yaml"), []byte("not: a pod"), 0o644))
	e.start()

	name := "static-web-" + e.cfg.NodeName
	mirror := e.waitPod(name, "mirror pod Running", running)
	hash := mirror.Annotations[kubelet.AnnotationConfigMirror]
	assert.NotEmpty(t, hash)
	assert.Equal(t, hash, mirror.Annotations[kubelet.AnnotationConfigHash])
	assert.Equal(t, "file", mirror.Annotations[kubelet.AnnotationConfigSource])
	assert.NotEqual(t, hash, string(mirror.UID), "the mirror is an API object of its own")
	require.Len(t, mirror.OwnerReferences, 1)
	assert.Equal(t, "Node", mirror.OwnerReferences[0].Kind)
	assert.Equal(t, e.cfg.NodeName, mirror.OwnerReferences[0].Name)
	assert.Equal(t, e.cfg.NodeName, mirror.Spec.NodeName)
	assert.Equal(t, "web", mirror.Labels["app"])
	containerID := containerStatus(mirror, "app").ContainerID

	// The runtime runs the static pod under the hashed UID.
	sbs, _, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	require.Len(t, sbs, 1)
	assert.Equal(t, hash, sbs[0].Pod.UID)

	// A deleted mirror pod comes back; the static pod keeps running.
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}))
	again := e.waitPod(name, "a new mirror pod", func(p *corev1.Pod) bool {
		return p != nil && p.UID != mirror.UID && p.DeletionTimestamp == nil && running(p)
	})
	assert.Equal(t, containerID, containerStatus(again, "app").ContainerID, "the container was not restarted")

	// Removing the manifest stops the pod and deletes its mirror.
	require.NoError(t, os.Remove(manifest))
	e.step(interval)
	e.waitPod(name, "mirror pod deleted", func(p *corev1.Pod) bool { return p == nil })
	deadline := time.Now().Add(waitTimeout)
	for {
		sbs, ctrs, err := e.runtime.List(context.Background())
		require.NoError(t, err)
		if len(sbs) == 0 && len(ctrs) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "static pod left running")
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStaticPodChangedFileIsANewPod(t *testing.T) {
	dir := t.TempDir()
	interval := 5 * time.Second
	e := newEnv(t, func(c *kubelet.Config) { c.StaticPodDir = dir; c.StaticPodInterval = interval })
	manifest := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(staticManifest), 0o644))
	e.start()
	name := "static-web-" + e.cfg.NodeName
	first := e.waitPod(name, "Running", running)

	changed := staticManifest + "  terminationGracePeriodSeconds: 5\n"
	require.NoError(t, os.WriteFile(manifest, []byte(changed), 0o644))
	e.step(interval)
	second := e.waitPod(name, "the new version's mirror", func(p *corev1.Pod) bool {
		return p != nil && p.Annotations[kubelet.AnnotationConfigMirror] != first.Annotations[kubelet.AnnotationConfigMirror] && running(p)
	})
	assert.NotEqual(t, containerStatus(first, "app").ContainerID, containerStatus(second, "app").ContainerID)
}
