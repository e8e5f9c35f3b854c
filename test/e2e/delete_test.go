package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// forceWarning is what kubectl prints to stderr for --grace-period=0 --force.
const forceWarning = "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.\n"

// TestKubectlDeletePods: a pod no node runs is deleted at once; a bound pod
// is only marked (deletionTimestamp, grace period 30s) until the kubelet —
// or a forced delete — removes it; dry runs delete nothing.
func TestKubectlDeletePods(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()

		createPod(t, c, "unbound")
		assert.Equal(t, "pod \"unbound\" deleted (server dry run)\n", k.OK("delete", "pod", "unbound", "--dry-run=server"))
		getPod(t, c, "unbound")
		assert.Equal(t, "pod \"unbound\" deleted\n", k.OK("delete", "pod", "unbound", "--timeout=20s"))
		requirePodGone(t, c, "unbound")

		createPod(t, c, "forced")
		r := k.Run("delete", "pod", "forced", "--grace-period=0", "--force")
		require.Equal(t, 0, r.Code, "%s", r)
		assert.Equal(t, "pod \"forced\" force deleted\n", r.Stdout)
		assert.Equal(t, forceWarning, r.Stderr)
		requirePodGone(t, c, "forced")

		createPod(t, c, "bound")
		bindPod(t, c, "bound", "node-1")
		pod := getPod(t, c, "bound")
		require.Equal(t, "node-1", pod.Spec.NodeName)
		assert.Equal(t, "pod \"bound\" deleted\n", k.OK("delete", "pod", "bound", "--wait=false"))
		pod = getPod(t, c, "bound")
		assert.NotNil(t, pod.DeletionTimestamp, "a bound pod waits for its kubelet")
		if assert.NotNil(t, pod.DeletionGracePeriodSeconds) {
			assert.EqualValues(t, 30, *pod.DeletionGracePeriodSeconds)
		}
		out := k.OK("get", "pod", "bound")
		assert.Equal(t, "Terminating", tableRow(t, out, "bound")[2], "STATUS of a pod being deleted")

		r = k.Run("delete", "pod", "bound", "--grace-period=0", "--force")
		require.Equal(t, 0, r.Code, "%s", r)
		assert.Equal(t, "pod \"bound\" force deleted\n", r.Stdout)
		requirePodGone(t, c, "bound")

		r = k.Fail("delete", "pod", "bound")
		assert.Equal(t, "Error from server (NotFound): pods \"bound\" not found\n", r.Stderr)
	})
}

// TestKubectlDeleteCascade: --cascade=orphan records the orphan finalizer
// (the object stays, marked, for the garbage collector), foreground the
// foregroundDeletion finalizer, and background deletes at once.
func TestKubectlDeleteCascade(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		apps := srv.Client().AppsV1().Deployments("default")
		for _, name := range []string{"orphaned", "foreground", "background"} {
			assert.Equal(t, "deployment.apps/"+name+" created\n", k.OK("create", "deploy", name, "--image=img:1"))
		}

		assert.Equal(t, "deployment.apps \"orphaned\" deleted\n", k.OK("delete", "deploy", "orphaned", "--cascade=orphan", "--wait=false"))
		d, err := apps.Get(testContext(t, apiTimeout), "orphaned", metav1.GetOptions{})
		require.NoError(t, err, "a deployment deleted with --cascade=orphan waits for the garbage collector")
		assert.Equal(t, []string{metav1.FinalizerOrphanDependents}, d.Finalizers)
		assert.NotNil(t, d.DeletionTimestamp)

		assert.Equal(t, "deployment.apps \"foreground\" deleted\n", k.OK("delete", "deploy", "foreground", "--cascade=foreground", "--wait=false"))
		d, err = apps.Get(testContext(t, apiTimeout), "foreground", metav1.GetOptions{})
		require.NoError(t, err, "a deployment deleted with --cascade=foreground waits for the garbage collector")
		assert.Equal(t, []string{metav1.FinalizerDeleteDependents}, d.Finalizers)
		assert.NotNil(t, d.DeletionTimestamp)

		assert.Equal(t, "deployment.apps \"background\" deleted\n", k.OK("delete", "deploy", "background", "--cascade=background", "--timeout=20s"))
		_, err = apps.Get(testContext(t, apiTimeout), "background", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "background cascade deletes the deployment at once: %v", err)
	})
}
