package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// lastApplied is the annotation client-side kubectl apply keeps.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TestKubectlApply: apply creates, re-applying is "unchanged", a modified
// manifest is "configured"; --dry-run=server and kubectl diff change
// nothing. kubectl validates manifests (strictly, by default) and so needs
// the server's OpenAPI documents.
func TestKubectlApply(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()

		out := k.OK("apply", "-f", podManifest, "--dry-run=server")
		assert.Equal(t, "pod/nginx created (server dry run)\n", out)
		requirePodGone(t, c, "nginx")

		out = k.OK("apply", "-f", podManifest)
		assert.Equal(t, "pod/nginx created\n", out)
		pod := getPod(t, c, "nginx")
		assert.Equal(t, map[string]string{"app": "nginx", "tier": "web"}, pod.Labels)
		assert.Contains(t, pod.Annotations[lastApplied], `"image":"nginx:1.27"`)
		assert.Equal(t, corev1.PodPending, pod.Status.Phase)

		out = k.OK("apply", "-f", podManifest)
		assert.Equal(t, "pod/nginx unchanged\n", out)
		assert.Equal(t, pod.ResourceVersion, getPod(t, c, "nginx").ResourceVersion, "unchanged apply must not write")

		// kubectl diff: exit 0 without differences, 1 with them.
		r := k.Run("diff", "-f", podManifest)
		require.Equal(t, 0, r.Code, "%s", r)
		assert.Empty(t, r.Stdout)
		r = k.Run("diff", "-f", "testdata/pod-modified.yaml")
		require.Equal(t, 1, r.Code, "%s", r)
		assert.True(t, hasDiffLine(r.Stdout, "-", "image: nginx:1.27"), "diff output:\n%s", r.Stdout)
		assert.True(t, hasDiffLine(r.Stdout, "+", "image: nginx:1.28"), "diff output:\n%s", r.Stdout)
		assert.True(t, hasDiffLine(r.Stdout, "+", "tier: frontend"), "diff output:\n%s", r.Stdout)

		out = k.OK("apply", "-f", "testdata/pod-modified.yaml", "--dry-run=server")
		assert.Equal(t, "pod/nginx configured (server dry run)\n", out)
		assert.Equal(t, pod.ResourceVersion, getPod(t, c, "nginx").ResourceVersion, "dry run and diff must not write")

		out = k.OK("apply", "-f", "testdata/pod-modified.yaml")
		assert.Equal(t, "pod/nginx configured\n", out)
		pod = getPod(t, c, "nginx")
		assert.Equal(t, map[string]string{"app": "nginx", "tier": "frontend"}, pod.Labels)
		assert.Equal(t, "e2e-modified", pod.Annotations["podkit.dev/owner"])
		assert.Equal(t, "nginx:1.28", pod.Spec.Containers[0].Image)
		assert.Contains(t, pod.Annotations[lastApplied], `"image":"nginx:1.28"`)

		r = k.Run("diff", "-f", "testdata/pod-modified.yaml")
		assert.Equal(t, 0, r.Code, "%s", r)
	})
}

// hasDiffLine reports whether unified diff output has a line starting
// with sign whose rest, trimmed, is text.
func hasDiffLine(diff, sign, text string) bool {
	for _, line := range strings.Split(diff, "\n") {
		if rest, ok := strings.CutPrefix(line, sign); ok && !strings.HasPrefix(line, sign+sign) && strings.TrimSpace(rest) == text {
			return true
		}
	}
	return false
}

// TestKubectlServerSideApply: apply --server-side creates, re-applies and
// records the manager in managedFields; a second manager changing an owned
// field conflicts until it forces.
func TestKubectlServerSideApply(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()
		assert.Equal(t, "pod/nginx serverside-applied\n", k.OK("apply", "--server-side", "-f", podManifest))
		assert.Equal(t, "pod/nginx serverside-applied\n", k.OK("apply", "--server-side", "-f", podManifest))
		pod := getPod(t, c, "nginx")
		require.NotEmpty(t, pod.ManagedFields)
		assert.Equal(t, "kubectl", pod.ManagedFields[0].Manager)

		r := k.Fail("apply", "--server-side", "--field-manager=other", "-f", "testdata/pod-modified.yaml")
		assert.Contains(t, r.Stderr, "conflict")
		k.OK("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "testdata/pod-modified.yaml")
		assert.Equal(t, "nginx:1.28", getPod(t, c, "nginx").Spec.Containers[0].Image)
	})
}
