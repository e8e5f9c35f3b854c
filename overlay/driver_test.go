package overlay_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/overlay/overlaytest"
)

func newDriver(t testing.TB, root string, opts ...overlay.Option) *overlay.Driver {
	t.Helper()
	d, err := overlay.New(root, opts...)
	require.NoError(t, err)
	return d
}

func TestDriverConformance(t *testing.T) {
	for name, opts := range map[string][]overlay.Option{
		"default": nil,
		"nosync":  {overlay.WithNoSync()},
	} {
		t.Run(name, func(t *testing.T) {
			overlaytest.Run(t, func(_ context.Context, t testing.TB, root string) overlay.Snapshotter {
				return newDriver(t, root, opts...)
			})
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := overlay.New("")
	assert.ErrorIs(t, err, overlay.ErrInvalidArgument)
	_, err = overlay.New(t.TempDir(), overlay.WithClock(nil))
	assert.ErrorIs(t, err, overlay.ErrInvalidArgument)
	_, err = overlay.New(t.TempDir(), overlay.WithLogger(nil))
	assert.ErrorIs(t, err, overlay.ErrInvalidArgument)
}

// TestMetadataSurvivesRestart needs no mounts: it reopens the database.
func TestMetadataSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := newDriver(t, root)
	mounts, err := d.Prepare(ctx, "a", "")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mounts[0].Source, "f"), []byte("x"), 0o644))
	require.NoError(t, d.Commit(ctx, "base", "a"))
	_, err = d.Prepare(ctx, "c", "base")
	require.NoError(t, err)
	require.NoError(t, d.Close())

	d = newDriver(t, root)
	defer d.Close()
	info, err := d.Stat(ctx, "base")
	require.NoError(t, err)
	assert.Equal(t, overlay.KindCommitted, info.Kind)
	info, err = d.Stat(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, "base", info.Parent)
	ms, err := d.Mounts(ctx, "c")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "overlay", ms[0].Type)
	assert.Contains(t, strings.Join(ms[0].Options, ","), "lowerdir="+filepath.Join(root, "snapshots"))
}

func TestCleanupRemovesOrphans(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := newDriver(t, root)
	defer d.Close()
	_, err := d.Prepare(ctx, "keep", "")
	require.NoError(t, err)
	orphan := filepath.Join(root, "snapshots", "999")
	require.NoError(t, os.MkdirAll(filepath.Join(orphan, "fs", "x"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "snapshots", "rm-5"), 0o755))
	require.NoError(t, d.Cleanup(ctx))
	entries, err := os.ReadDir(filepath.Join(root, "snapshots"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	_, err = d.Mounts(ctx, "keep")
	assert.NoError(t, err)
}

func TestRemoveLeavesNoDirectories(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := newDriver(t, root)
	defer d.Close()
	_, err := d.Prepare(ctx, "a", "")
	require.NoError(t, err)
	require.NoError(t, d.Commit(ctx, "base", "a"))
	_, err = d.Prepare(ctx, "c", "base")
	require.NoError(t, err)
	require.NoError(t, d.Remove(ctx, "c"))
	require.NoError(t, d.Remove(ctx, "base"))
	entries, err := os.ReadDir(filepath.Join(root, "snapshots"))
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestLongLowerdir stacks enough layers with long paths that the overlay
// option string exceeds a page, which mount(2) cannot take.
func TestLongLowerdir(t *testing.T) {
	testutil.RequireRoot(t)
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, strings.Repeat("long-directory-name-", 6))
	d := newDriver(t, root, overlay.WithNoSync())
	defer d.Close()
	t.Cleanup(func() { overlaytest.AssertNoMounts(t, base) })
	const depth = 60
	parent := ""
	for i := range depth {
		key := "k" + strconv.Itoa(i)
		mounts, err := d.Prepare(ctx, key, parent)
		require.NoError(t, err)
		upper := mounts[0].Source
		for _, o := range mounts[0].Options {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				upper = v
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(upper, "f"+strconv.Itoa(i)), []byte(strconv.Itoa(i)), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(upper, "top"), []byte(strconv.Itoa(i)), 0o644))
		name := "l" + strconv.Itoa(i)
		require.NoError(t, d.Commit(ctx, name, key))
		parent = name
	}
	mounts, err := d.Prepare(ctx, "container", parent)
	require.NoError(t, err)
	require.Greater(t, len(strings.Join(mounts[0].Options, ",")), os.Getpagesize())
	target, unmount := overlaytest.MountT(t, base, mounts)
	got, err := os.ReadFile(filepath.Join(target, "top"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(depth-1), string(got))
	for i := range depth {
		_, err := os.Stat(filepath.Join(target, "f"+strconv.Itoa(i)))
		assert.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(target, "written"), []byte("w"), 0o644))
	unmount()
	require.NoError(t, d.Remove(ctx, "container"))

	// A read-only view of the same stack.
	mounts, err = d.View(ctx, "view", parent)
	require.NoError(t, err)
	target, unmount = overlaytest.MountT(t, base, mounts)
	_, err = os.Stat(filepath.Join(target, "f0"))
	assert.NoError(t, err)
	unmount()
	require.NoError(t, d.Remove(ctx, "view"))
}

func TestUnmountIdempotent(t *testing.T) {
	assert.NoError(t, overlay.Unmount(filepath.Join(t.TempDir(), "missing")))
	assert.NoError(t, overlay.Unmount(t.TempDir()))
}
