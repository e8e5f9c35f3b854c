package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fakeV2Files are the control files a fake cgroup v2 directory starts with.
var fakeV2Files = map[string]string{
	"cgroup.controllers":     "cpu memory pids",
	"cgroup.subtree_control": "",
	"cgroup.procs":           "",
	"cgroup.events":          "populated 0\nfrozen 0\n",
	"cgroup.kill":            "",
	"cgroup.freeze":          "0",
	"cgroup.type":            "domain",
	"cpu.weight":             "100",
	"cpu.max":                "max 100000",
	"cpu.stat":               "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
	"memory.max":             "max",
	"memory.current":         "0",
	"memory.stat":            "anon 0\nfile 0\ninactive_file 0\n",
	"memory.events":          "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
	"memory.swap.max":        "max",
	"memory.oom.group":       "0",
	"pids.max":               "max",
	"pids.current":           "0",
}

// fakeKernelMkdir creates a directory the way cgroupfs does: with its
// control files already in it.
func fakeKernelMkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for name, content := range fakeV2Files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// newFakeV2 returns a Tree on a fake cgroup v2 mount in a temp dir.
func newFakeV2(t *testing.T, opts ...Option) (*Tree, string) {
	t.Helper()
	mnt := t.TempDir()
	for name, content := range fakeV2Files {
		require.NoError(t, os.WriteFile(filepath.Join(mnt, name), []byte(content), 0o644))
	}
	tr, err := New(append([]Option{WithCgroupV2(mnt), WithPollInterval(time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	d := tr.d.(*v2)
	d.mkdir = fakeKernelMkdir
	d.livenessPoll = 5 * time.Millisecond
	return tr, mnt
}

func read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func TestV2TreeValues(t *testing.T) {
	tr, mnt := newFakeV2(t, WithPodPidsLimit(512))
	ctx := context.Background()
	assert.Equal(t, 2, tr.Version())
	g := testPod("g1", nil, []corev1.Container{ctr("a", res{"cpu": "500m", "memory": "64Mi"}, res{"cpu": "500m", "memory": "64Mi"})})
	b := testPod("b1", nil, []corev1.Container{ctr("a", res{"cpu": "1"}, res{"cpu": "2", "memory": "128Mi"})})
	b2 := testPod("b2", nil, []corev1.Container{ctr("a", res{"cpu": "500m"}, nil)})
	e := testPod("e1", nil, []corev1.Container{ctr("a", nil, nil)})

	gp, err := tr.EnsurePod(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, "/kubepods/podg1", gp)
	assert.Equal(t, "20", read(t, filepath.Join(mnt, gp, "cpu.weight")), "512 shares")
	assert.Equal(t, "50000 100000", read(t, filepath.Join(mnt, gp, "cpu.max")))
	assert.Equal(t, "67108864", read(t, filepath.Join(mnt, gp, "memory.max")))
	assert.Equal(t, "512", read(t, filepath.Join(mnt, gp, "pids.max")))
	for _, dir := range []string{mnt, filepath.Join(mnt, "kubepods")} {
		sc := read(t, filepath.Join(dir, "cgroup.subtree_control"))
		for _, c := range []string{"+cpu", "+memory", "+pids"} {
			assert.Contains(t, sc, c, "%s enables %s for its children", dir, c)
		}
	}

	bp, err := tr.EnsurePod(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, "/kubepods/burstable/podb1", bp)
	assert.Equal(t, "39", read(t, filepath.Join(mnt, bp, "cpu.weight")), "1024 shares")
	assert.Equal(t, "200000 100000", read(t, filepath.Join(mnt, bp, "cpu.max")))
	assert.Equal(t, "134217728", read(t, filepath.Join(mnt, bp, "memory.max")))
	assert.Equal(t, "39", read(t, filepath.Join(mnt, "kubepods/burstable/cpu.weight")), "tier = burstable requests (1 CPU)")

	_, err = tr.EnsurePod(ctx, b2)
	require.NoError(t, err)
	assert.Equal(t, "59", read(t, filepath.Join(mnt, "kubepods/burstable/cpu.weight")), "tier = 1.5 CPU = 1536 shares")
	assert.Equal(t, "max 100000", read(t, filepath.Join(mnt, "kubepods/burstable/podb2/cpu.max")), "no cpu limit: no quota")

	ep, err := tr.EnsurePod(ctx, e)
	require.NoError(t, err)
	assert.Equal(t, "/kubepods/besteffort/pode1", ep)
	assert.Equal(t, "1", read(t, filepath.Join(mnt, ep, "cpu.weight")))
	assert.Equal(t, "1", read(t, filepath.Join(mnt, "kubepods/besteffort/cpu.weight")))

	cp, err := tr.EnsureContainer(ctx, bp, "app", tr.ContainerResources(&b.Spec.Containers[0]))
	require.NoError(t, err)
	assert.Equal(t, bp+"/app", cp)
	assert.Equal(t, "1", read(t, filepath.Join(mnt, cp, "memory.oom.group")))
	assert.Equal(t, "0", read(t, filepath.Join(mnt, cp, "memory.swap.max")))
	assert.Equal(t, "134217728", read(t, filepath.Join(mnt, cp, "memory.max")))

	require.NoError(t, tr.Remove(ctx, bp))
	assert.NoDirExists(t, filepath.Join(mnt, bp))
	assert.Equal(t, "20", read(t, filepath.Join(mnt, "kubepods/burstable/cpu.weight")), "removed pod no longer counts (512 shares)")
	require.NoError(t, tr.Remove(ctx, bp), "removing twice")

	require.NoError(t, tr.Cleanup(ctx))
	assert.NoDirExists(t, filepath.Join(mnt, "kubepods"))
}

func TestV2Stats(t *testing.T) {
	tr, mnt := newFakeV2(t)
	ctx := context.Background()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tr.o.now = func() time.Time { return at }
	p, err := tr.EnsurePod(ctx, testPod("s1", nil, []corev1.Container{ctr("a", nil, nil)}))
	require.NoError(t, err)
	dir := filepath.Join(mnt, p)
	for name, content := range map[string]string{
		"cpu.stat":       "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
		"memory.current": "10485760",
		"memory.stat":    "anon 8388608\nfile 2097152\ninactive_file 1048576\n",
		"memory.max":     "20971520",
		"memory.events":  "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n",
		"pids.current":   "7",
		"pids.max":       "max",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	s, err := tr.Stats(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, Stats{
		Time:                  at,
		CPUUsageNanos:         1500000,
		MemoryUsageBytes:      10485760,
		MemoryWorkingSetBytes: 9437184,
		MemoryLimitBytes:      20971520,
		OOMKills:              1,
		PIDs:                  7,
	}, *s)
	_, err = tr.Stats(ctx, "/kubepods/nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestV2WatchOOM(t *testing.T) {
	tr, mnt := newFakeV2(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := tr.EnsurePod(ctx, testPod("o1", nil, []corev1.Container{ctr("a", nil, nil)}))
	require.NoError(t, err)
	events := filepath.Join(mnt, p, "memory.events")
	ch, err := tr.WatchOOM(ctx, p)
	require.NoError(t, err)

	// An increase of "oom" alone (the limit was hit, nothing killed) is not
	// an OOM kill.
	require.NoError(t, os.WriteFile(events, []byte("low 0\nhigh 0\nmax 5\noom 1\noom_kill 0\n"), 0o644))
	require.NoError(t, os.WriteFile(events, []byte("low 0\nhigh 0\nmax 6\noom 2\noom_kill 1\n"), 0o644))
	select {
	case ev, ok := <-ch:
		require.True(t, ok)
		assert.Equal(t, p, ev.Path)
		assert.Equal(t, uint64(1), ev.Kills)
	case <-time.After(10 * time.Second):
		t.Fatal("no OOM event")
	}

	require.NoError(t, tr.Remove(ctx, p))
	select {
	case _, ok := <-ch:
		assert.False(t, ok, "the channel closes once the cgroup is gone")
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end after removal")
	}
}

func TestV2WatchOOMEndsWithContext(t *testing.T) {
	tr, _ := newFakeV2(t)
	p, err := tr.EnsurePod(context.Background(), testPod("o2", nil, []corev1.Container{ctr("a", nil, nil)}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := tr.WatchOOM(ctx, p)
	require.NoError(t, err)
	cancel()
	select {
	case _, ok := <-ch:
		assert.False(t, ok)
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end with its context")
	}
	_, err = tr.WatchOOM(context.Background(), "/kubepods/missing")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestTreeRejectsPathsOutsideItsRoot(t *testing.T) {
	tr, _ := newFakeV2(t)
	ctx := context.Background()
	for _, p := range []string{"/", "/system.slice", "/kubepodsx", "kubepods/x", "/kubepods/../etc", "/kubepods//x"} {
		err := tr.Remove(ctx, p)
		assert.Error(t, err, p)
		_, err = tr.Stats(ctx, p)
		assert.Error(t, err, p)
	}
	assert.ErrorIs(t, tr.Remove(ctx, "/system.slice"), ErrOutsideRoot)
	_, err := tr.EnsureContainer(ctx, "/kubepods/podx", "../../escape", nil)
	assert.ErrorIs(t, err, ErrInvalidPath)
	_, err = tr.EnsurePod(ctx, testPod("", nil, nil))
	assert.ErrorIs(t, err, ErrInvalidPath)
}

func TestOptionsRejectBadValues(t *testing.T) {
	for name, opt := range map[string]Option{
		"relative root": WithRoot("kubepods"),
		"root is /":     WithRoot("/"),
		"unclean root":  WithRoot("/a/../b"),
		"tiny period":   WithCPUCFSQuotaPeriod(time.Microsecond),
		"huge period":   WithCPUCFSQuotaPeriod(2 * time.Second),
		"nil logger":    WithLogger(nil),
		"nil clock":     WithClock(nil),
		"zero poll":     WithPollInterval(0),
		"negative poll": WithPollInterval(-time.Second),
	} {
		_, err := New(WithCgroupV2(t.TempDir()), opt)
		assert.Error(t, err, name)
	}
}

func TestToV2(t *testing.T) {
	r := toV2(PodResources(testPod("g", nil, []corev1.Container{ctr("a", res{"cpu": "1", "memory": "1Gi"}, res{"cpu": "1", "memory": "1Gi"})}), PodOptions{}))
	assert.Equal(t, uint64(39), *r.CPU.Weight)
	assert.Equal(t, "max 100000", string(r.CPU.Max), "quota -1 is max, not -1")
	assert.Equal(t, int64(1<<30), *r.Memory.Max)
	assert.Empty(t, toV2(nil).EnabledControllers())
}

func TestUpdateQOSResyncsTheTiers(t *testing.T) {
	tr, mnt := newFakeV2(t, WithNodeAllocatable(corev1.ResourceList{
		corev1.ResourceCPU:    quantityOf("2"),
		corev1.ResourceMemory: quantityOf("1Gi"),
		ResourcePIDs:          quantityOf("1000"),
	}))
	ctx := context.Background()
	a := testPod("a", nil, []corev1.Container{ctr("c", res{"cpu": "1"}, nil)})
	b := testPod("b", nil, []corev1.Container{ctr("c", res{"cpu": "1"}, nil)})
	for _, p := range []*corev1.Pod{a, b} {
		_, err := tr.EnsurePod(ctx, p)
		require.NoError(t, err)
	}
	tier := filepath.Join(mnt, "kubepods/burstable/cpu.weight")
	assert.Equal(t, "79", read(t, tier), "2 CPUs of burstable requests")
	assert.Equal(t, "79", read(t, filepath.Join(mnt, "kubepods/cpu.weight")), "root = allocatable cpu")
	assert.Equal(t, "1073741824", read(t, filepath.Join(mnt, "kubepods/memory.max")))
	assert.Equal(t, "1000", read(t, filepath.Join(mnt, "kubepods/pids.max")))

	// The kubelet's active pods no longer include b (it was deleted while
	// this process was down, say).
	require.NoError(t, tr.UpdateQOS(ctx, []*corev1.Pod{a}))
	assert.Equal(t, "39", read(t, tier))
	// Someone reset the tier behind our back: UpdateQOS repairs it.
	require.NoError(t, os.WriteFile(tier, []byte("100"), 0o644))
	require.NoError(t, tr.UpdateQOS(ctx, []*corev1.Pod{a}))
	assert.Equal(t, "39", read(t, tier))
}

func quantityOf(s string) resource.Quantity { return resource.MustParse(s) }

func TestNewDetectsTheHostMode(t *testing.T) {
	tr, err := New()
	require.NoError(t, err)
	want := 1
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		want = 2
	}
	assert.Equal(t, want, tr.Version())
	assert.Equal(t, DefaultRoot, tr.Root())
}
