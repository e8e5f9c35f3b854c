package oci_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
	"github.com/podkit/podkit/sandbox/oci"
)

func TestMain(m *testing.M) {
	native.Init() // the supervisor and the pause are re-execs of this binary
	os.Exit(m.Run())
}

// node is one test's throwaway node: a runtime root, a cgroup root, a
// bridge network inside a network namespace standing in for the host, and
// a state root for the OCI runtimes.
type node struct {
	root    string
	ociRoot string
	cgroup  string
	tree    *cgroups.Tree
	bridge  *cni.Bridge
	env     *cnitest.Env
}

// newNode builds a node. Tests of crun call requireCrunCgroups first, so
// that the node's cgroup tree sees the v1 hierarchy it mounts.
func newNode(t *testing.T) *node {
	t.Helper()
	testutil.RequireRoot(t)
	env := cnitest.NewEnv(t)
	n := &node{env: env, cgroup: "/podkit-test-" + env.Suffix}
	// Not t.TempDir: the supervisor outlives subtests, and its socket path
	// must stay short.
	n.root = filepath.Join("/run/podkit-test", env.Suffix)
	n.ociRoot = filepath.Join("/run/podkit-test", env.Suffix+"-oci")
	require.NoError(t, os.MkdirAll(n.root, 0o711))
	var err error
	n.tree, err = cgroups.New(cgroups.WithRoot(n.cgroup))
	require.NoError(t, err)
	n.bridge, err = cni.NewBridge(cni.BridgeConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir},
		cni.WithNodeNetNS(env.NodeNS.Path()), cni.WithBridgeName(env.BridgeName))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		waitSupervisorGone(t, n.root)
		assert.NoError(t, n.bridge.Cleanup(ctx))
		assert.NoError(t, n.bridge.Close())
		assert.NoError(t, n.tree.Cleanup(ctx))
		removeCgroupDebris(t, n.cgroup)
		assert.NoError(t, os.RemoveAll(n.root))
		requireNoOCIState(t, n.ociRoot)
	})
	return n
}

// handler returns a Runtime of the given flavor keeping its state under
// the node's OCI root.
func (n *node) handler(t *testing.T, name string) *oci.Runtime {
	t.Helper()
	h, err := oci.New(name, oci.WithRoot(filepath.Join(n.ociRoot, name)), oci.WithTempDir(t.TempDir()))
	require.NoError(t, err)
	return h
}

// runner opens a native runtime running every pod through h.
func (n *node) runner(t *testing.T, name string, h *oci.Runtime) *oci.Runner {
	t.Helper()
	r, err := oci.NewRunner(t.Context(), native.Config{
		Root: n.root, Network: n.bridge, Cgroups: n.tree,
		SupervisorIdleExit: 100 * time.Millisecond,
	}, name, h)
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

// removeCgroupDebris removes what is left of the node's cgroup root in
// every hierarchy after the tree's own cleanup. On a hybrid node runc and
// crun also place containers in the cgroup2 hierarchy (at the same path),
// and only remove the container's own directory: the pod and QoS levels
// above it stay, because the cgroups stage drives the v1 hierarchies only.
func removeCgroupDebris(t *testing.T, root string) {
	t.Helper()
	tops, _ := filepath.Glob(filepath.Join(oci.DefaultCgroupRoot, "*", strings.TrimPrefix(root, "/")))
	for _, top := range tops {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := rmdirRetry(d); err != nil {
				t.Errorf("cgroup left behind: %v", err)
			}
		}
		t.Logf("removed cgroup debris %s (%d dirs)", top, len(dirs))
	}
}

// rmdirRetry removes a cgroup directory, waiting a little while the kernel
// still reports it busy (a process that just exited).
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return fmt.Errorf("rmdir %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireNoOCIState checks that every container was deleted from the OCI
// runtimes' state roots, then removes the roots.
func requireNoOCIState(t *testing.T, root string) {
	t.Helper()
	roots, _ := os.ReadDir(root)
	for _, r := range roots {
		left, _ := os.ReadDir(filepath.Join(root, r.Name()))
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		assert.Empty(t, names, "containers left in the state of %s", r.Name())
	}
	assert.NoError(t, os.RemoveAll(root))
}

func podConfig(name string) *sandbox.SandboxConfig {
	return &sandbox.SandboxConfig{
		Pod:      sandbox.PodMeta{Name: name, Namespace: "default", UID: fmt.Sprintf("%s-%s", name, cnitest.RandomHex(4))},
		Hostname: name,
	}
}
