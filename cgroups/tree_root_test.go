package cgroups_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/internal/testutil"
)

// hostTree returns a Tree on the host's real cgroups under a unique root,
// removed (and checked gone from every hierarchy) at cleanup.
func hostTree(t *testing.T, opts ...cgroups.Option) *cgroups.Tree {
	t.Helper()
	testutil.RequireRoot(t)
	root := "/podkit-cgtest-" + randomSuffix()
	tr, err := cgroups.New(append([]cgroups.Option{cgroups.WithRoot(root)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, tr.Cleanup(ctx))
		for _, d := range tr.Dirs(root) {
			assert.NoDirExists(t, d, "leak: cgroup directory left behind")
		}
	})
	return tr
}

// control reads a control file of the cgroup at path from whichever
// hierarchy has it.
func control(t *testing.T, tr *cgroups.Tree, path, file string) string {
	t.Helper()
	for _, d := range tr.Dirs(path) {
		if b, err := os.ReadFile(filepath.Join(d, file)); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no %s for %s in %v", file, path, tr.Dirs(path))
	return ""
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }

func pod(uid string, req, lim map[corev1.ResourceName]string) *corev1.Pod {
	c := corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}
	for k, v := range req {
		c.Resources.Requests[k] = quantity(v)
	}
	for k, v := range lim {
		c.Resources.Limits[k] = quantity(v)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p" + uid, Namespace: "default", UID: types.UID(uid + "-" + randomSuffix())},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

func TestHostTreeHoldsTheMappedValues(t *testing.T) {
	tr := hostTree(t, cgroups.WithPodPidsLimit(100))
	ctx := t.Context()
	g := pod("g", map[corev1.ResourceName]string{"cpu": "500m", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "500m", "memory": "64Mi"})
	b := pod("b", map[corev1.ResourceName]string{"cpu": "250m"}, map[corev1.ResourceName]string{"cpu": "1", "memory": "128Mi"})
	e := pod("e", nil, nil)

	gp, err := tr.EnsurePod(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, tr.Root()+"/pod"+string(g.UID), gp)
	bp, err := tr.EnsurePod(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, tr.Root()+"/burstable/pod"+string(b.UID), bp)
	ep, err := tr.EnsurePod(ctx, e)
	require.NoError(t, err)
	assert.Equal(t, tr.Root()+"/besteffort/pod"+string(e.UID), ep)

	if tr.Version() == 1 {
		assert.Equal(t, "512", control(t, tr, gp, "cpu.shares"))
		assert.Equal(t, "50000", control(t, tr, gp, "cpu.cfs_quota_us"))
		assert.Equal(t, "100000", control(t, tr, gp, "cpu.cfs_period_us"))
		assert.Equal(t, "67108864", control(t, tr, gp, "memory.limit_in_bytes"))
		assert.Equal(t, "100", control(t, tr, gp, "pids.max"))
		assert.Equal(t, "256", control(t, tr, bp, "cpu.shares"))
		assert.Equal(t, "100000", control(t, tr, bp, "cpu.cfs_quota_us"))
		assert.Equal(t, "134217728", control(t, tr, bp, "memory.limit_in_bytes"))
		assert.Equal(t, "2", control(t, tr, ep, "cpu.shares"))
		assert.Equal(t, "-1", control(t, tr, ep, "cpu.cfs_quota_us"))
		assert.Equal(t, "256", control(t, tr, tr.Root()+"/burstable", "cpu.shares"), "burstable tier = burstable requests")
		assert.Equal(t, "2", control(t, tr, tr.Root()+"/besteffort", "cpu.shares"))
	} else {
		assert.Equal(t, "20", control(t, tr, gp, "cpu.weight"))
		assert.Equal(t, "50000 100000", control(t, tr, gp, "cpu.max"))
		assert.Equal(t, "67108864", control(t, tr, gp, "memory.max"))
		assert.Equal(t, "100", control(t, tr, gp, "pids.max"))
		assert.Equal(t, "10", control(t, tr, bp, "cpu.weight"))
		assert.Equal(t, "1", control(t, tr, ep, "cpu.weight"))
		assert.Equal(t, "10", control(t, tr, tr.Root()+"/burstable", "cpu.weight"))
	}

	cp, err := tr.EnsureContainer(ctx, bp, "app", tr.ContainerResources(&b.Spec.Containers[0]))
	require.NoError(t, err)
	if tr.Version() == 1 {
		assert.Equal(t, "256", control(t, tr, cp, "cpu.shares"))
		assert.Equal(t, "134217728", control(t, tr, cp, "memory.limit_in_bytes"))
	}
	s, err := tr.Stats(ctx, bp)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), s.PIDs)
	assert.Equal(t, uint64(128<<20), s.MemoryLimitBytes)

	require.NoError(t, tr.Remove(ctx, bp))
	for _, d := range tr.Dirs(bp) {
		assert.NoDirExists(t, d)
	}
	if tr.Version() == 1 {
		assert.Equal(t, "2", control(t, tr, tr.Root()+"/burstable", "cpu.shares"), "the tier forgets the removed pod")
	}
}

func TestHostOOMKillIsDetected(t *testing.T) {
	tr := hostTree(t)
	ctx := t.Context()
	p := pod("oom", nil, map[corev1.ResourceName]string{"memory": "32Mi"})
	pp, err := tr.EnsurePod(ctx, p)
	require.NoError(t, err)
	cp, err := tr.EnsureContainer(ctx, pp, "hog", tr.ContainerResources(&p.Spec.Containers[0]))
	require.NoError(t, err)
	events, err := tr.WatchOOM(ctx, cp)
	require.NoError(t, err)

	h := startHelper(t, "hog")
	require.NoError(t, tr.AddProcess(ctx, cp, h.cmd.Process.Pid))
	s, err := tr.Stats(ctx, cp)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, s.PIDs, uint64(1), "pids counts the helper's tasks")
	h.release(t)

	ws := h.wait(t)
	require.True(t, ws.Signaled(), "the hog must be killed, got %v", ws)
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
	select {
	case ev, ok := <-events:
		require.True(t, ok, "OOM watch ended without an event")
		assert.Equal(t, cp, ev.Path)
		assert.False(t, ev.Time.IsZero())
	case <-time.After(30 * time.Second):
		t.Fatal("no OOM event")
	}
	s, err = tr.Stats(ctx, cp)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, s.OOMKills, uint64(1))
	assert.LessOrEqual(t, s.MemoryUsageBytes, uint64(32<<20))

	require.NoError(t, tr.Remove(ctx, pp))
	// The kernel may signal the OOM more than once; the watch must end
	// (close its channel) once the cgroup is gone.
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("OOM watch still open after removal")
		}
	}
}

func TestHostRemoveKillsWhatIsLeft(t *testing.T) {
	tr := hostTree(t)
	ctx := t.Context()
	p := pod("rm", nil, nil)
	pp, err := tr.EnsurePod(ctx, p)
	require.NoError(t, err)
	cp, err := tr.EnsureContainer(ctx, pp, "c", nil)
	require.NoError(t, err)
	h := startHelper(t, "fork")
	require.NoError(t, tr.AddProcess(ctx, cp, h.cmd.Process.Pid))
	h.release(t)
	grandchild := h.readPid(t)
	require.True(t, alive(grandchild))
	s, err := tr.Stats(ctx, pp)
	require.NoError(t, err)
	procs, err := tr.Processes(ctx, pp)
	require.NoError(t, err)
	assert.ElementsMatch(t, []int{h.cmd.Process.Pid, grandchild}, procs, "the forked child inherited the cgroup")
	assert.GreaterOrEqual(t, s.PIDs, uint64(2))

	require.NoError(t, tr.Remove(ctx, pp))
	ws := h.wait(t)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child killed, got %v", ws)
	assert.False(t, alive(grandchild), "grandchild killed")
	for _, d := range tr.Dirs(pp) {
		assert.NoDirExists(t, d)
	}
	require.NoError(t, tr.Remove(ctx, pp), "removing again is a no-op")
}

func TestHostRemoveIsBoundedByContext(t *testing.T) {
	tr := hostTree(t)
	p := pod("ctx", nil, nil)
	pp, err := tr.EnsurePod(t.Context(), p)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, tr.Remove(ctx, pp), context.Canceled)
}
