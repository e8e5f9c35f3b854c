package native_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
)

func TestMain(m *testing.M) {
	native.Init()
	os.Exit(m.Run())
}

// node is one test's throwaway node: a runtime root, a cgroup root, and a
// bridge network inside a network namespace standing in for the host.
type node struct {
	root   string
	tree   *cgroups.Tree
	bridge *cni.Bridge
	env    *cnitest.Env
}

func newNode(t *testing.T) *node {
	t.Helper()
	testutil.RequireRoot(t)
	env := cnitest.NewEnv(t)
	n := &node{env: env}
	// Not t.TempDir: the supervisor outlives subtests, and its socket path
	// must stay short.
	n.root = filepath.Join("/run/podkit-test", env.Suffix)
	require.NoError(t, os.MkdirAll(n.root, 0o711))
	var err error
	n.tree, err = cgroups.New(cgroups.WithRoot("/podkit-test-" + env.Suffix))
	require.NoError(t, err)
	n.bridge, err = cni.NewBridge(cni.BridgeConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir},
		cni.WithNodeNetNS(env.NodeNS.Path()), cni.WithBridgeName(env.BridgeName))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		waitSupervisorGone(t, n.root)
		left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(n.root))
		assert.NoError(t, err)
		for _, m := range left {
			t.Errorf("mount left behind: %s", m.Mountpoint)
		}
		ents, _ := os.ReadDir(filepath.Join(n.root, "sandboxes"))
		assert.Empty(t, ents, "sandbox dirs left behind")
		ents, _ = os.ReadDir(filepath.Join(n.root, "containers"))
		assert.Empty(t, ents, "container dirs left behind")
		assert.NoError(t, n.bridge.Cleanup(ctx))
		assert.NoError(t, n.bridge.Close())
		assert.NoError(t, n.tree.Cleanup(ctx))
		assert.NoError(t, os.RemoveAll(n.root))
	})
	return n
}

func (n *node) runtime(t *testing.T) *native.Runtime {
	t.Helper()
	r, err := native.New(t.Context(), native.Config{
		Root: n.root, Network: n.bridge, Cgroups: n.tree,
		SupervisorIdleExit: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	return r
}

// podCgroup creates a pod cgroup (Burstable) under the node's tree.
func (n *node) podCgroup(t *testing.T) string {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: types.UID(cnitest.RandomHex(8))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}}}}}}
	p, err := n.tree.EnsurePod(t.Context(), pod)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.tree.Remove(context.Background(), p)) })
	return p
}

// waitSupervisorGone waits for the supervisor of root to exit after its
// idle timeout, so a test leaves no process behind.
func waitSupervisorGone(t *testing.T, root string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "supervisor.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("supervisor %d still running 30s after the test", pid)
}

func podConfig(name string) *sandbox.SandboxConfig {
	return &sandbox.SandboxConfig{Pod: sandbox.PodMeta{Name: name, Namespace: "default", UID: fmt.Sprintf("%s-%s", name, cnitest.RandomHex(4))}}
}

func testboxOverlay(lower, upper, work string) []overlay.Mount {
	return []overlay.Mount{{Type: "overlay", Source: "overlay", Options: []string{"lowerdir=" + lower, "upperdir=" + upper, "workdir=" + work}}}
}
