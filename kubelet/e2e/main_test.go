// Package e2e_test runs the kubelet on the real stack as root: the
// in-process API server and scheduler, the native runtime in a throwaway
// node network namespace with a bridge, real cgroups, an image pulled from
// a registry on 127.0.0.1 and unpacked into overlayfs snapshots.
package e2e_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox/native"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

func TestMain(m *testing.M) {
	native.Init()
	os.Exit(m.Run())
}

// node is one test's node: API server, scheduler, kubelet over the native
// runtime, a bridge in a throwaway network namespace, a unique cgroup root,
// overlay snapshots and an image service pulling from a local registry.
type node struct {
	t       *testing.T
	name    string
	client  kubernetes.Interface
	env     *cnitest.Env
	tree    *cgroups.Tree
	runtime *native.Runtime
	snaps   *overlay.Driver
	images  *image.Service
	kubelet *kubelet.Kubelet
	bridge  *cni.Bridge
	kcfg    kubelet.Config
	kstop   func() error
	root    string // runtime root
	dir     string // kubelet and image state
	image   string // the testbox image's reference
}

func newNode(t *testing.T) *node {
	t.Helper()
	testutil.RequireRoot(t)
	n := &node{t: t, env: cnitest.NewEnv(t)}
	n.name = "e2e-" + n.env.Suffix
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	// API server and scheduler.
	st := memory.New()
	cfg, err := app.DefaultConfig(st, log)
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(ctx))
	rc := inproc.RESTConfig(srv.Handler())
	rc.QPS = -1
	n.client, err = kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	sched, err := scheduler.New(scheduler.Config{Client: n.client, Profiles: []scheduler.Profile{plugins.DefaultProfile("")}},
		scheduler.WithLogger(log))
	require.NoError(t, err)
	sctx, scancel := context.WithCancel(ctx)
	sdone := make(chan error, 1)
	go func() { sdone <- sched.Run(sctx) }()

	// The image, served on 127.0.0.1.
	reg, err := registry.New(registry.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, reg.Start())
	img, err := build.FromDir(testutil.TestboxRootfs(t), build.Config{Entrypoint: []string{"/bin/testbox"}})
	require.NoError(t, err)
	n.image = reg.Addr() + "/podkit/testbox:1"
	ref, err := name.ParseReference(n.image)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))

	// The node's stages.
	n.dir = t.TempDir()
	n.root = filepath.Join("/run/podkit-test", n.env.Suffix)
	require.NoError(t, os.MkdirAll(n.root, 0o711))
	n.tree, err = cgroups.New(cgroups.WithRoot("/podkit-test-" + n.env.Suffix))
	require.NoError(t, err)
	bridge, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: n.env.PodCIDR, StateDir: n.env.StateDir},
		cni.WithNodeNetNS(n.env.NodeNS.Path()), cni.WithBridgeName(n.env.BridgeName))
	require.NoError(t, err)
	n.runtime, err = native.New(ctx, native.Config{Root: n.root, Network: bridge, Cgroups: n.tree, SupervisorIdleExit: 100 * time.Millisecond})
	require.NoError(t, err)
	n.snaps, err = overlay.New(filepath.Join(n.dir, "snapshots"))
	require.NoError(t, err)
	n.images, err = image.New(image.Config{Root: filepath.Join(n.dir, "images")})
	require.NoError(t, err)

	n.createNode()
	n.kcfg = kubelet.Config{
		NodeName: n.name, Client: n.client, Runtime: n.runtime, Images: n.images, Snapshots: n.snaps, Cgroups: n.tree,
		RootDir: filepath.Join(n.dir, "kubelet"), LogDir: filepath.Join(n.dir, "logs"),
		DNS:    cni.NodeDNS{ClusterDNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, ClusterDomain: "cluster.local"},
		Logger: log,
	}
	n.startKubelet()
	n.bridge = bridge

	t.Cleanup(func() {
		n.deleteAll()
		n.stopKubelet()
		scancel()
		assert.NoError(t, <-sdone)
		assert.NoError(t, n.runtime.Close())
		waitSupervisorGone(t, n.root)
		left, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) {
			return !strings.HasPrefix(m.Mountpoint, n.root) && !strings.HasPrefix(m.Mountpoint, n.dir), false
		})
		assert.NoError(t, err)
		for _, m := range left {
			t.Errorf("mount left behind: %s", m.Mountpoint)
		}
		assert.NoError(t, n.snaps.Close())
		assert.NoError(t, bridge.Cleanup(context.Background()))
		assert.NoError(t, bridge.Close())
		assert.NoError(t, n.tree.Cleanup(context.Background()))
		assert.NoError(t, os.RemoveAll(n.root))
		assert.NoError(t, reg.Close())
		_ = st.Close()
	})
	return n
}

// startKubelet runs a kubelet until stopKubelet.
func (n *node) startKubelet() {
	n.t.Helper()
	k, err := kubelet.New(n.kcfg)
	require.NoError(n.t, err)
	n.kubelet = k
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	n.kstop = func() error { cancel(); return <-done }
}

func (n *node) stopKubelet() {
	if n.kstop != nil {
		assert.NoError(n.t, n.kstop())
		n.kstop = nil
	}
}

// restartKubelet stops the kubelet and its runtime, as a dying process
// would leave them, and starts new ones over the same state.
func (n *node) restartKubelet() {
	n.t.Helper()
	n.stopKubelet()
	require.NoError(n.t, n.runtime.Close())
	var err error
	n.runtime, err = native.New(context.Background(), native.Config{Root: n.root, Network: n.bridge, Cgroups: n.tree,
		SupervisorIdleExit: 100 * time.Millisecond})
	require.NoError(n.t, err)
	n.kcfg.Runtime = n.runtime
	n.startKubelet()
}

// createNode registers the Node with its pod CIDR and allocatable.
func (n *node) createNode() {
	ctx := context.Background()
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{corev1.LabelHostname: n.name, corev1.LabelOSStable: "linux"}},
		Spec: corev1.NodeSpec{PodCIDR: n.env.PodCIDR.String(), PodCIDRs: []string{n.env.PodCIDR.String()}}}
	created, err := n.client.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(n.t, err)
	created.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	created.Status.Allocatable = created.Status.Capacity.DeepCopy()
	created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	_, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(n.t, err)
}

// deleteAll deletes every pod and waits until the kubelet removed them.
func (n *node) deleteAll() {
	ctx := context.Background()
	list, err := n.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range list.Items {
		_ = n.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(1))})
	}
	// Pods that finished are deleted at once; wait for the kubelet to
	// have torn everything down, not only for the API objects.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		list, err := n.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		sbs, ctrs, rerr := n.runtime.List(ctx)
		dirs, _ := os.ReadDir(filepath.Join(n.kcfg.RootDir, "pods")) // removed last
		if err == nil && rerr == nil && len(list.Items) == 0 && len(sbs) == 0 && len(ctrs) == 0 && len(dirs) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.t.Error("pods were not deleted")
}

// waitSupervisorGone waits for the runtime's supervisor to exit after its
// idle timeout, so the test leaves no process behind.
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
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("supervisor %d still running 30s after the test", pid)
}

func ptr[T any](v T) *T { return &v }
