package overlay_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/overlay/overlaytest"
)

// BenchmarkPrepareMount measures a container rootfs for a cached image:
// Prepare over a 5-layer chain and mount it (then unmount and remove,
// outside the timing). It reports the median as p50-ns.
func BenchmarkPrepareMount(b *testing.B) {
	testutil.RequireRoot(b)
	ctx := context.Background()
	base := b.TempDir()
	d, err := overlay.New(filepath.Join(base, "snapshots"))
	require.NoError(b, err)
	defer d.Close()
	b.Cleanup(func() { overlaytest.AssertNoMounts(b, base) })
	parent := ""
	for i := range 5 {
		m, err := d.Prepare(ctx, "x"+strconv.Itoa(i), parent)
		require.NoError(b, err)
		upper := m[0].Source
		for _, o := range m[0].Options {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				upper = v
			}
		}
		require.NoError(b, os.WriteFile(filepath.Join(upper, "f"+strconv.Itoa(i)), []byte("x"), 0o644))
		name := "l" + strconv.Itoa(i)
		require.NoError(b, d.Commit(ctx, name, "x"+strconv.Itoa(i)))
		parent = name
	}
	target := filepath.Join(base, "rootfs")
	require.NoError(b, os.Mkdir(target, 0o755))
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := "c" + strconv.Itoa(i)
		start := time.Now()
		m, err := d.Prepare(ctx, key, parent)
		if err == nil {
			err = overlay.MountAll(m, target)
		}
		times = append(times, time.Since(start))
		b.StopTimer()
		require.NoError(b, err)
		require.NoError(b, overlay.Unmount(target))
		require.NoError(b, d.Remove(ctx, key))
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}
