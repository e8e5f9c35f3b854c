package e2e

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/internal/testutil"
)

// TestControllerManagerProcess runs `podkit controller-manager` as its own
// process against `podkit apiserver`: kubectl create deploy yields a
// ReplicaSet and its pods, scale changes them, and deleting the deployment
// removes them through the garbage collector.
func TestControllerManagerProcess(t *testing.T) {
	t.Parallel()
	srv := startAPIServer(t, withMemoryStore())
	cmd := exec.Command(podkitBinary, "controller-manager", "--kubeconfig", srv.Kubeconfig)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k := newKubectl(t, testutil.Kubectl(t, 32), 32, srv)
	k.OK("create", "deploy", "web", "--image=img:1", "--replicas=3")
	pods := func() int {
		l, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return -1
		}
		return len(l.Items)
	}
	require.Eventually(t, func() bool { return pods() == 3 }, 30*time.Second, 50*time.Millisecond)
	rs, err := c.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, rs.Items, 1)
	assert.Equal(t, "1", rs.Items[0].Annotations["deployment.kubernetes.io/revision"])

	k.OK("scale", "deploy", "web", "--replicas=1")
	require.Eventually(t, func() bool { return pods() == 1 }, 30*time.Second, 50*time.Millisecond)

	k.OK("delete", "deploy", "web")
	require.Eventually(t, func() bool {
		l, err := c.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(l.Items) == 0 && pods() == 0
	}, 30*time.Second, 50*time.Millisecond, "the garbage collector removes the ReplicaSet and its pods")
}
