package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// writable emulates cgroupfs, where control files are always writable by
// root: cgroup1 creates missing files with mode 0, which a non-root test
// could neither read nor rewrite.
func writable(t *testing.T, root string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o644)
	}))
}

// newFakeV1 returns a Tree on fake v1 hierarchies (cpu, cpuacct, memory,
// pids) in a temp dir: cgroup1 writes plain files there.
func newFakeV1(t *testing.T, opts ...Option) (*Tree, string) {
	t.Helper()
	root := t.TempDir()
	h := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewCpu(root), cgroup1.NewCpuacct(root), cgroup1.NewMemory(root), cgroup1.NewPids(root),
		}, nil
	}
	tr, err := New(append([]Option{WithCgroupV1(h), WithPollInterval(time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return tr, root
}

func TestV1FakeTreeValues(t *testing.T) {
	tr, root := newFakeV1(t, WithRoot("/kp"), WithPodPidsLimit(256))
	ctx := context.Background()
	assert.Equal(t, 1, tr.Version())
	g := testPod("g", nil, []corev1.Container{ctr("a", res{"cpu": "500m", "memory": "64Mi"}, res{"cpu": "500m", "memory": "64Mi"})})
	b := testPod("b", nil, []corev1.Container{ctr("a", res{"cpu": "250m"}, res{"memory": "32Mi"})})

	gp, err := tr.EnsurePod(ctx, g)
	require.NoError(t, err)
	writable(t, root)
	assert.Equal(t, "/kp/podg", gp)
	assert.Equal(t, "512", read(t, filepath.Join(root, "cpu", gp, "cpu.shares")))
	assert.Equal(t, "50000", read(t, filepath.Join(root, "cpu", gp, "cpu.cfs_quota_us")))
	assert.Equal(t, "100000", read(t, filepath.Join(root, "cpu", gp, "cpu.cfs_period_us")))
	assert.Equal(t, "67108864", read(t, filepath.Join(root, "memory", gp, "memory.limit_in_bytes")))
	assert.Equal(t, "256", read(t, filepath.Join(root, "pids", gp, "pids.max")))
	assert.DirExists(t, filepath.Join(root, "cpuacct", gp), "every hierarchy gets the pod")
	assert.Equal(t, "2", read(t, filepath.Join(root, "cpu/kp/besteffort/cpu.shares")))
	assert.Equal(t, "2", read(t, filepath.Join(root, "cpu/kp/burstable/cpu.shares")), "no burstable pod yet")

	bp, err := tr.EnsurePod(ctx, b)
	require.NoError(t, err)
	writable(t, root)
	assert.Equal(t, "/kp/burstable/podb", bp)
	assert.Equal(t, "256", read(t, filepath.Join(root, "cpu", bp, "cpu.shares")))
	assert.NoFileExists(t, filepath.Join(root, "cpu", bp, "cpu.cfs_quota_us"), "no cpu limit: quota untouched")
	assert.Equal(t, "33554432", read(t, filepath.Join(root, "memory", bp, "memory.limit_in_bytes")))
	assert.Equal(t, "256", read(t, filepath.Join(root, "cpu/kp/burstable/cpu.shares")))

	cp, err := tr.EnsureContainer(ctx, bp, "app", tr.ContainerResources(&b.Spec.Containers[0]))
	require.NoError(t, err)
	writable(t, root)
	assert.Equal(t, "33554432", read(t, filepath.Join(root, "memory", cp, "memory.limit_in_bytes")))
	_, err = tr.EnsureContainer(ctx, bp, "bad", &specsWithUnified)
	assert.ErrorIs(t, err, ErrUnsupported)

	require.NoError(t, tr.Remove(ctx, bp))
	writable(t, root)
	for _, d := range tr.Dirs(bp) {
		assert.NoDirExists(t, d)
	}
	assert.Equal(t, "2", read(t, filepath.Join(root, "cpu/kp/burstable/cpu.shares")), "the tier forgets the removed pod")
	require.NoError(t, tr.Cleanup(ctx))
	for _, d := range tr.Dirs("/kp") {
		assert.NoDirExists(t, d)
	}
}

func TestV1FakeStats(t *testing.T) {
	tr, root := newFakeV1(t)
	ctx := context.Background()
	p, err := tr.EnsurePod(ctx, testPod("s", nil, []corev1.Container{ctr("a", nil, nil)}))
	require.NoError(t, err)
	writable(t, root)
	for file, content := range map[string]string{
		"cpuacct/" + p + "/cpuacct.usage":                 "123456789",
		"memory/" + p + "/memory.usage_in_bytes":          "10485760",
		"memory/" + p + "/memory.limit_in_bytes":          "20971520",
		"memory/" + p + "/memory.stat":                    "cache 0\nrss 0\ntotal_inactive_file 2097152\n",
		"memory/" + p + "/memory.oom_control":             "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		"pids/" + p + "/pids.current":                     "3",
		"pids/" + p + "/pids.max":                         "max",
		"memory/" + p + "/memory.max_usage_in_bytes":      "0",
		"memory/" + p + "/memory.failcnt":                 "0",
		"memory/" + p + "/memory.memsw.usage_in_bytes":    "0",
		"memory/" + p + "/memory.kmem.usage_in_bytes":     "0",
		"cpuacct/" + p + "/cpuacct.usage_percpu":          "100 200",
		"cpuacct/" + p + "/cpuacct.stat":                  "user 1\nsystem 1\n",
		"cpu/" + p + "/cpu.stat":                          "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		"memory/" + p + "/memory.kmem.tcp.usage_in_bytes": "0",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, file), []byte(content), 0o644))
	}
	s, err := tr.Stats(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, uint64(123456789), s.CPUUsageNanos)
	assert.Equal(t, uint64(10485760), s.MemoryUsageBytes)
	assert.Equal(t, uint64(8388608), s.MemoryWorkingSetBytes)
	assert.Equal(t, uint64(20971520), s.MemoryLimitBytes)
	assert.Equal(t, uint64(2), s.OOMKills)
	assert.Equal(t, uint64(3), s.PIDs)
	assert.Equal(t, uint64(0), s.PIDsLimit)
}

var specsWithUnified = specs.LinuxResources{Unified: map[string]string{"memory.oom.group": "1"}}
