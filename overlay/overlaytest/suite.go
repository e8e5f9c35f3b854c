// Package overlaytest is the conformance suite of the overlay.Snapshotter
// contract. Every built-in snapshotter runs it, and so can a user's:
//
//	func TestMySnapshotter(t *testing.T) {
//		overlaytest.Run(t, func(ctx context.Context, t testing.TB, root string) overlay.Snapshotter {
//			return mine.New(root)
//		})
//	}
//
// The suite mounts what the snapshotter returns with overlay.MountAll, so it
// needs root (it skips otherwise, see internal/testutil) and snapshotters
// whose mounts are bind or overlay mounts.
package overlaytest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
)

// NewFunc makes a fresh snapshotter rooted at root (an empty directory). The
// suite closes it at the end of the test if it is an io.Closer.
type NewFunc func(ctx context.Context, t testing.TB, root string) overlay.Snapshotter

// Run runs every conformance test against snapshotters made by newSn.
func Run(t *testing.T, newSn NewFunc) {
	tests := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string)
	}{
		{"PrepareCommitView", testPrepareCommitView},
		{"Errors", testErrors},
		{"Isolation", testIsolation},
		{"DeepChain", testDeepChain},
		{"RemoveIdempotent", testRemoveIdempotent},
		{"ConcurrentPrepare", testConcurrentPrepare},
		{"StatWalkUsage", testStatWalkUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testutil.RequireRoot(t)
			ctx := context.Background()
			base := t.TempDir()
			root := filepath.Join(base, "root")
			work := filepath.Join(base, "work")
			require.NoError(t, os.MkdirAll(root, 0o700))
			require.NoError(t, os.MkdirAll(work, 0o700))
			sn := newSn(ctx, t, root)
			t.Cleanup(func() {
				if c, ok := sn.(io.Closer); ok {
					assert.NoError(t, c.Close())
				}
			})
			// Registered after TempDir, so it runs before the removal.
			t.Cleanup(func() { AssertNoMounts(t, base) })
			tc.fn(ctx, t, sn, work)
		})
	}
}

// AssertNoMounts fails t if anything mounted involves dir.
func AssertNoMounts(t testing.TB, dir string) {
	t.Helper()
	left, err := overlay.MountsUsing(dir)
	require.NoError(t, err)
	for _, m := range left {
		t.Errorf("mount left behind: %s on %s (%s %s)", m.Source, m.Mountpoint, m.FSType, m.VFSOptions)
	}
}

// MountT mounts mounts on a new directory under dir and unmounts it when
// the test ends (or earlier through the returned function, idempotent).
func MountT(t testing.TB, dir string, mounts []overlay.Mount) (string, func()) {
	t.Helper()
	target, err := os.MkdirTemp(dir, "mnt-")
	require.NoError(t, err)
	require.NoError(t, overlay.MountAll(mounts, target))
	var once sync.Once
	unmount := func() {
		once.Do(func() { assert.NoError(t, overlay.Unmount(target)) })
	}
	t.Cleanup(unmount)
	return target, unmount
}

func write(t testing.TB, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func read(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func assertMissing(t testing.TB, p string) {
	t.Helper()
	_, err := os.Lstat(p)
	assert.True(t, errors.Is(err, os.ErrNotExist), "%s should not exist (err %v)", p, err)
}

// commitLayer prepares key over parent, lets fill change the rootfs, and
// commits it as name.
func commitLayer(ctx context.Context, t testing.TB, sn overlay.Snapshotter, work, name, parent string, fill func(root string)) {
	t.Helper()
	key := "prepare-" + name
	mounts, err := sn.Prepare(ctx, key, parent)
	require.NoError(t, err)
	target, unmount := MountT(t, work, mounts)
	fill(target)
	unmount()
	require.NoError(t, sn.Commit(ctx, name, key))
}

func testPrepareCommitView(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string) {
	commitLayer(ctx, t, sn, work, "base", "", func(root string) {
		write(t, filepath.Join(root, "etc/hostname"), "base")
		write(t, filepath.Join(root, "etc/gone"), "x")
		write(t, filepath.Join(root, "dir/a"), "a")
	})
	commitLayer(ctx, t, sn, work, "top", "base", func(root string) {
		assert.Equal(t, "base", read(t, filepath.Join(root, "etc/hostname")))
		write(t, filepath.Join(root, "etc/hostname"), "top")
		require.NoError(t, os.Remove(filepath.Join(root, "etc/gone")))
		require.NoError(t, os.RemoveAll(filepath.Join(root, "dir")))
		write(t, filepath.Join(root, "dir/b"), "b")
	})
	mounts, err := sn.View(ctx, "view", "top")
	require.NoError(t, err)
	target, unmount := MountT(t, work, mounts)
	assert.Equal(t, "top", read(t, filepath.Join(target, "etc/hostname")))
	assertMissing(t, filepath.Join(target, "etc/gone"))
	assertMissing(t, filepath.Join(target, "dir/a"))
	assert.Equal(t, "b", read(t, filepath.Join(target, "dir/b")))
	err = os.WriteFile(filepath.Join(target, "new"), nil, 0o644)
	assert.Error(t, err, "a view must be read-only")

	again, err := sn.Mounts(ctx, "view")
	require.NoError(t, err)
	assert.Equal(t, mounts, again)
	unmount()

	// A view of the base alone, and an empty view.
	for _, parent := range []string{"base", ""} {
		mounts, err := sn.View(ctx, "view-"+parent, parent)
		require.NoError(t, err)
		target, unmount := MountT(t, work, mounts)
		if parent == "base" {
			assert.Equal(t, "base", read(t, filepath.Join(target, "etc/hostname")))
		} else {
			entries, err := os.ReadDir(target)
			require.NoError(t, err)
			assert.Empty(t, entries)
		}
		unmount()
		require.NoError(t, sn.Remove(ctx, "view-"+parent))
	}
	for _, k := range []string{"view", "top", "base"} {
		require.NoError(t, sn.Remove(ctx, k), "removing %s", k)
	}
}

func testErrors(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string) {
	commitLayer(ctx, t, sn, work, "base", "", func(root string) { write(t, filepath.Join(root, "f"), "x") })
	_, err := sn.Prepare(ctx, "active", "base")
	require.NoError(t, err)
	_, err = sn.View(ctx, "view", "base")
	require.NoError(t, err)

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"prepare existing key", func() error { _, err := sn.Prepare(ctx, "active", ""); return err }, overlay.ErrAlreadyExists},
		{"prepare committed name", func() error { _, err := sn.Prepare(ctx, "base", ""); return err }, overlay.ErrAlreadyExists},
		{"prepare empty key", func() error { _, err := sn.Prepare(ctx, "", ""); return err }, overlay.ErrInvalidArgument},
		{"missing parent", func() error { _, err := sn.Prepare(ctx, "x", "nope"); return err }, overlay.ErrNotFound},
		{"active parent", func() error { _, err := sn.Prepare(ctx, "x", "active"); return err }, overlay.ErrFailedPrecondition},
		{"view parent", func() error { _, err := sn.View(ctx, "x", "view"); return err }, overlay.ErrFailedPrecondition},
		{"commit view", func() error { return sn.Commit(ctx, "c", "view") }, overlay.ErrFailedPrecondition},
		{"commit committed", func() error { return sn.Commit(ctx, "c", "base") }, overlay.ErrFailedPrecondition},
		{"commit to taken name", func() error { return sn.Commit(ctx, "base", "active") }, overlay.ErrAlreadyExists},
		{"commit missing", func() error { return sn.Commit(ctx, "c", "nope") }, overlay.ErrNotFound},
		{"mounts of committed", func() error { _, err := sn.Mounts(ctx, "base"); return err }, overlay.ErrFailedPrecondition},
		{"mounts of missing", func() error { _, err := sn.Mounts(ctx, "nope"); return err }, overlay.ErrNotFound},
		{"remove parent", func() error { return sn.Remove(ctx, "base") }, overlay.ErrFailedPrecondition},
	}
	for _, tc := range cases {
		err := tc.call()
		assert.ErrorIs(t, err, tc.want, tc.name)
	}
	// The failed calls changed nothing.
	_, err = sn.Mounts(ctx, "active")
	assert.NoError(t, err)
	for _, k := range []string{"active", "view", "base"} {
		require.NoError(t, sn.Remove(ctx, k))
	}
	_, err = sn.Prepare(ctx, "x", "base")
	assert.ErrorIs(t, err, overlay.ErrNotFound, "a removed parent is gone")
}

func testIsolation(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string) {
	commitLayer(ctx, t, sn, work, "l1", "", func(root string) { write(t, filepath.Join(root, "shared"), "image") })
	commitLayer(ctx, t, sn, work, "l2", "l1", func(root string) { write(t, filepath.Join(root, "more"), "image2") })
	m1, err := sn.Prepare(ctx, "c1", "l2")
	require.NoError(t, err)
	m2, err := sn.Prepare(ctx, "c2", "l2")
	require.NoError(t, err)
	assert.Equal(t, lowerdirs(m1), lowerdirs(m2), "containers of one image share their lower layers")
	r1, u1 := MountT(t, work, m1)
	r2, u2 := MountT(t, work, m2)
	write(t, filepath.Join(r1, "shared"), "changed by c1")
	write(t, filepath.Join(r1, "only-c1"), "1")
	require.NoError(t, os.Remove(filepath.Join(r1, "more")))
	assert.Equal(t, "image", read(t, filepath.Join(r2, "shared")))
	assert.Equal(t, "image2", read(t, filepath.Join(r2, "more")))
	assertMissing(t, filepath.Join(r2, "only-c1"))
	u1()
	u2()
	// The image is unchanged for a third container.
	m3, err := sn.Prepare(ctx, "c3", "l2")
	require.NoError(t, err)
	r3, u3 := MountT(t, work, m3)
	assert.Equal(t, "image", read(t, filepath.Join(r3, "shared")))
	u3()
	for _, k := range []string{"c1", "c2", "c3", "l2", "l1"} {
		require.NoError(t, sn.Remove(ctx, k))
	}
}

func lowerdirs(ms []overlay.Mount) []string {
	var out []string
	for _, m := range ms {
		for _, o := range m.Options {
			if len(o) > 9 && o[:9] == "lowerdir=" {
				out = append(out, o)
			}
		}
	}
	return out
}

func testDeepChain(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string) {
	const depth = 40
	parent := ""
	for i := range depth {
		name := "layer-" + strconv.Itoa(i)
		commitLayer(ctx, t, sn, work, name, parent, func(root string) {
			write(t, filepath.Join(root, "top"), strconv.Itoa(i))
			write(t, filepath.Join(root, "files", strconv.Itoa(i)), strconv.Itoa(i))
		})
		parent = name
	}
	mounts, err := sn.Prepare(ctx, "container", parent)
	require.NoError(t, err)
	target, unmount := MountT(t, work, mounts)
	assert.Equal(t, strconv.Itoa(depth-1), read(t, filepath.Join(target, "top")), "the newest layer wins")
	entries, err := os.ReadDir(filepath.Join(target, "files"))
	require.NoError(t, err)
	assert.Len(t, entries, depth)
	unmount()
	require.NoError(t, sn.Remove(ctx, "container"))
	for i := depth - 1; i >= 0; i-- {
		require.NoError(t, sn.Remove(ctx, "layer-"+strconv.Itoa(i)))
	}
}

func testRemoveIdempotent(ctx context.Context, t *testing.T, sn overlay.Snapshotter, _ string) {
	require.NoError(t, sn.Remove(ctx, "never-existed"))
	_, err := sn.Prepare(ctx, "a", "")
	require.NoError(t, err)
	require.NoError(t, sn.Remove(ctx, "a"))
	require.NoError(t, sn.Remove(ctx, "a"))
	_, err = sn.Mounts(ctx, "a")
	assert.ErrorIs(t, err, overlay.ErrNotFound)
	_, err = sn.Prepare(ctx, "a", "")
	assert.NoError(t, err, "a removed key can be reused")
	require.NoError(t, sn.Remove(ctx, "a"))
}

func testConcurrentPrepare(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string) {
	commitLayer(ctx, t, sn, work, "base", "", func(root string) { write(t, filepath.Join(root, "f"), "x") })
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = sn.Prepare(ctx, "c"+strconv.Itoa(i), "base")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "prepare %d", i)
	}
	// One key prepared concurrently succeeds exactly once.
	results := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); _, results[i] = sn.Prepare(ctx, "same", "base") }()
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		} else {
			assert.ErrorIs(t, err, overlay.ErrAlreadyExists)
		}
	}
	assert.Equal(t, 1, ok)
	for i := range n {
		require.NoError(t, sn.Remove(ctx, "c"+strconv.Itoa(i)))
	}
	require.NoError(t, sn.Remove(ctx, "same"))
	require.NoError(t, sn.Remove(ctx, "base"))
}

func testStatWalkUsage(ctx context.Context, t *testing.T, sn overlay.Snapshotter, work string) {
	commitLayer(ctx, t, sn, work, "base", "", func(root string) {
		write(t, filepath.Join(root, "big"), string(make([]byte, 64<<10)))
	})
	mounts, err := sn.Prepare(ctx, "c", "base")
	require.NoError(t, err)
	if st, ok := sn.(overlay.Statter); ok {
		info, err := st.Stat(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, overlay.KindActive, info.Kind)
		assert.Equal(t, "base", info.Parent)
		info, err = st.Stat(ctx, "base")
		require.NoError(t, err)
		assert.Equal(t, overlay.KindCommitted, info.Kind)
		_, err = st.Stat(ctx, "nope")
		assert.ErrorIs(t, err, overlay.ErrNotFound)
	}
	if w, ok := sn.(overlay.Walker); ok {
		seen := map[string]overlay.Kind{}
		require.NoError(t, w.Walk(ctx, func(_ context.Context, info overlay.Info) error {
			seen[info.Name] = info.Kind
			return nil
		}))
		assert.Equal(t, map[string]overlay.Kind{"base": overlay.KindCommitted, "c": overlay.KindActive}, seen)
	}
	if u, ok := sn.(overlay.UsageReporter); ok {
		base, err := u.Usage(ctx, "base")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, base.Size, int64(64<<10))
		assert.GreaterOrEqual(t, base.Inodes, int64(2))
		before, err := u.Usage(ctx, "c")
		require.NoError(t, err)
		target, unmount := MountT(t, work, mounts)
		write(t, filepath.Join(target, "scratch"), string(make([]byte, 128<<10)))
		require.NoError(t, os.Link(filepath.Join(target, "scratch"), filepath.Join(target, "link")))
		unmount()
		after, err := u.Usage(ctx, "c")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, after.Size-before.Size, int64(128<<10), "writes count in the writable layer")
		assert.Less(t, after.Size-before.Size, int64(256<<10), "a hard link counts once")
		assert.Equal(t, before.Inodes+1, after.Inodes)
	}
	require.NoError(t, sn.Remove(ctx, "c"))
	require.NoError(t, sn.Remove(ctx, "base"))
}
