package podkit

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShutdownRemovesRunDir runs and deletes a pod, then shuts the node
// down: its run dir (the runtime's root: records, pinned namespaces, the
// supervisor's socket, pid file, lock and log) is gone, and nothing else
// of the node is left on the host.
func TestShutdownRemovesRunDir(t *testing.T) {
	e := newSvcEnv(t, upstreamDNS(t, "upstream.example.", netip.MustParseAddr("192.0.2.81")), nil)
	ctx := context.Background()
	e.createPods(backend("gone", e.c.Image(svcImage), map[string]string{"app": "gone"}))
	e.waitReady("gone")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(ctx, "gone", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := e.client.CoreV1().Pods("default").Get(ctx, "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 2*time.Minute, 50*time.Millisecond, "pod deleted")
	assert.FileExists(t, filepath.Join(e.runDir, "supervisor.pid"), "the node runs its supervisor in its run dir")

	e.stop()
	assert.NoDirExists(t, e.runDir, "the shut down node's run dir is removed")
	e.assertClean()
}

// TestShutdownRemovesRunDirWithPodRunning shuts a node down with a pod
// running: Run returning leaves the run dir (the next node adopts the
// pod's containers from it); Shutdown, which removes the pod's sandbox,
// then removes it too.
func TestShutdownRemovesRunDirWithPodRunning(t *testing.T) {
	e := newSvcEnv(t, upstreamDNS(t, "upstream.example.", netip.MustParseAddr("192.0.2.82")), nil)
	e.createPods(backend("kept", e.c.Image(svcImage), map[string]string{"app": "kept"}))
	e.waitReady("kept")

	e.cancel() // Run returns; the pod keeps running
	err := <-e.done
	e.done <- err // for stop
	sandboxes, rerr := os.ReadDir(filepath.Join(e.runDir, "sandboxes"))
	require.NoError(t, rerr)
	assert.Len(t, sandboxes, 1, "the running pod's sandbox stays for the next node to adopt")

	e.stop()
	assert.NoDirExists(t, e.runDir, "Shutdown removed the sandbox, then the run dir")
	e.assertClean()
}
