package kubelet_test

import (
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func waitingReason(reason string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == reason
	}
}

func TestImagePullBackOff(t *testing.T) {
	const ref = "registry.test/missing:1"
	e := newEnv(t)
	e.start()
	pod := e.pod("pull", []string{"sleep", "inf"})
	pod.Spec.Containers[0].Image = ref
	e.create(pod)

	p := e.waitPod("pull", "ErrImagePull", waitingReason("ErrImagePull"))
	assert.Equal(t, `failed to pull image "registry.test/missing:1": registry.test/missing: manifest unknown`,
		containerStatus(p, "app").State.Waiting.Message)
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	e.waitEvent("pull", `Normal Pulling Pulling image "registry.test/missing:1"`)
	e.waitEvent("pull", `Warning Failed Failed to pull image "registry.test/missing:1": failed to pull image "registry.test/missing:1": registry.test/missing: manifest unknown`)
	e.waitEvent("pull", "Warning Failed Error: ErrImagePull")
	assert.Equal(t, 1, e.images.Pulls(ref))

	// The next sync backs off without pulling.
	e.step(time.Second)
	p = e.waitPod("pull", "ImagePullBackOff", waitingReason("ImagePullBackOff"))
	assert.Equal(t, `Back-off pulling image "registry.test/missing:1"`, containerStatus(p, "app").State.Waiting.Message)
	e.waitEvent("pull", `Normal BackOff Back-off pulling image "registry.test/missing:1"`)
	e.waitEvent("pull", "Warning Failed Error: ImagePullBackOff")
	assert.Equal(t, 1, e.images.Pulls(ref))

	// After 10s it pulls again, fails, and backs off 20s.
	e.step(9 * time.Second)
	e.waitPod("pull", "ErrImagePull again", waitingReason("ErrImagePull"))
	assert.Equal(t, 2, e.images.Pulls(ref))
	e.step(time.Second)
	e.waitPod("pull", "ImagePullBackOff again", waitingReason("ImagePullBackOff"))
	e.step(10 * time.Second)
	e.waitPod("pull", "still backing off", waitingReason("ImagePullBackOff"))
	assert.Equal(t, 2, e.images.Pulls(ref), "20s back-off")

	// Once the image exists, the next pull succeeds.
	require.NoError(t, e.images.AddRemote(ref, v1.Config{Entrypoint: []string{"/bin/testbox"}}))
	e.step(10 * time.Second)
	e.waitPod("pull", "Running", running)
	e.waitEventPrefix("pull", `Normal Pulled Successfully pulled image "registry.test/missing:1" in 0s (0s including waiting). Image size: `)
}

func TestPullPolicyNever(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("never", []string{"sleep", "inf"})
	pod.Spec.Containers[0].Image = "registry.test/absent:1"
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	e.create(pod)
	p := e.waitPod("never", "ErrImageNeverPull", waitingReason("ErrImageNeverPull"))
	msg := `Container image "registry.test/absent:1" is not present with pull policy of Never`
	assert.Equal(t, msg, containerStatus(p, "app").State.Waiting.Message)
	e.waitEvent("never", "Warning ErrImageNeverPull "+msg)
	assert.Zero(t, e.images.Pulls("registry.test/absent:1"))
}

func TestPullPolicyAlwaysPullsPresentImages(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.images.AddRemote(testImage, v1.Config{Entrypoint: []string{"/bin/testbox"}}))
	e.start()
	pod := e.pod("always", []string{"sleep", "inf"})
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	e.create(pod)
	e.waitPod("always", "Running", running)
	assert.Equal(t, 1, e.images.Pulls(testImage))
}
