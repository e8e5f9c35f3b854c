package overlay_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/overlay/overlaytest"
)

// tree describes every entry under root: type, mode, owner, content or
// link target, and the user.* xattrs.
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(p, &st))
		desc := ""
		owner := fmt.Sprintf("%d:%d", st.Uid, st.Gid)
		perm := st.Mode & 0o7777
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			desc = fmt.Sprintf("dir %04o %s", perm, owner)
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			desc = fmt.Sprintf("file %04o %s %q", perm, owner, b)
		case syscall.S_IFLNK:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			desc = "link " + target
		case syscall.S_IFCHR:
			desc = fmt.Sprintf("char %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		case syscall.S_IFIFO:
			desc = fmt.Sprintf("fifo %04o", perm)
		}
		buf := make([]byte, 256)
		if n, err := unix.Lgetxattr(p, "user.test", buf); err == nil {
			desc += " user.test=" + string(buf[:n])
		}
		out[rel] = desc
		return nil
	}))
	return out
}

// image is a three-layer image exercising every OCI layer rule.
func image(t testing.TB) [][]byte {
	l1 := layerTar(t,
		dir("etc"),
		file("etc/passwd", "root:x:0:0"),
		withOwner(withMode(file("etc/shadow", "secret"), 0o640), 0, 42),
		entry{name: "etc/attr", body: "a", mode: 0o600, xattrs: map[string]string{"user.test": "hello"}},
		hardlink("etc/passwd-link", "etc/passwd"),
		dir("opt"), dir("opt/app"), file("opt/app/a", "a"), file("opt/app/b", "b"),
		dir("var"), dir("var/lib"), dir("var/lib/data"), file("var/lib/data/x", "x"),
		withOwner(withMode(dir("usr"), 0o750), 5, 6), dir("usr/bin"),
		withOwner(withMode(file("usr/bin/tool", "#!tool"), 0o4755), 1000, 1000),
		symlink("bin", "usr/bin"),
		entry{name: "run/fifo", typ: tar.TypeFifo, mode: 0o600},
		entry{name: "dev/null", typ: tar.TypeChar, mode: 0o666, major: 1, minor: 3},
		whiteout(".wh.ignored-in-base"),
	)
	l2 := layerTar(t,
		whiteout("etc/.wh.shadow"),
		dir("opt/app"), whiteout("opt/app/.wh..wh..opq"), file("opt/app/c", "c"),
		whiteout("var/.wh.lib"),
		hardlink("usr/bin/tool2", "usr/bin/tool"),
		file("deep/new/file", "deep"),
		file("usr/bin/newtool", "new"),
		whiteout("etc/.wh.not-there"),
		whiteout(".wh..wh.plnk"),
	)
	l3 := layerTar(t,
		dir("var/lib"), file("var/lib/fresh", "fresh"),
		whiteout("etc/.wh.passwd-link"), file("etc/passwd-link", "replaced"),
		dir("bin"), file("bin/own", "own"),
	)
	return [][]byte{l1, l2, l3}
}

func TestApplyMergedRootfs(t *testing.T) {
	testutil.RequireRoot(t)
	ctx := context.Background()
	base := t.TempDir()
	d, err := overlay.New(filepath.Join(base, "snapshots"))
	require.NoError(t, err)
	defer d.Close()
	t.Cleanup(func() { overlaytest.AssertNoMounts(t, base) })

	var layers []overlay.Layer
	for _, b := range image(t) {
		layers = append(layers, v1Layer(t, b))
	}
	u := overlay.NewUnpacker(d, nil)
	top, err := u.Unpack(ctx, layers)
	require.NoError(t, err)
	mounts, err := d.Prepare(ctx, "container", top)
	require.NoError(t, err)
	target, unmount := overlaytest.MountT(t, base, mounts)

	want := map[string]string{
		"etc":             "dir 0755 0:0",
		"etc/passwd":      `file 0644 0:0 "root:x:0:0"`,
		"etc/attr":        `file 0600 0:0 "a" user.test=hello`,
		"etc/passwd-link": `file 0644 0:0 "replaced"`,
		"opt":             "dir 0755 0:0",
		"opt/app":         "dir 0755 0:0",
		"opt/app/c":       `file 0644 0:0 "c"`,
		"var":             "dir 0755 0:0",
		"var/lib":         "dir 0755 0:0",
		"var/lib/fresh":   `file 0644 0:0 "fresh"`,
		"usr":             "dir 0750 5:6",
		"usr/bin":         "dir 0755 0:0",
		"usr/bin/tool":    `file 4755 1000:1000 "#!tool"`,
		"usr/bin/tool2":   `file 4755 1000:1000 "#!tool"`,
		"usr/bin/newtool": `file 0644 0:0 "new"`,
		"bin":             "dir 0755 0:0",
		"bin/own":         `file 0644 0:0 "own"`,
		"run":             "dir 0755 0:0",
		"run/fifo":        "fifo 0600",
		"dev":             "dir 0755 0:0",
		"dev/null":        "char 1:3",
		"deep":            "dir 0755 0:0",
		"deep/new":        "dir 0755 0:0",
		"deep/new/file":   `file 0644 0:0 "deep"`,
	}
	got := tree(t, target)
	assert.Equal(t, want, got, diffTrees(want, got))

	// Hard links share an inode, also when copied up from a lower layer.
	var a, b syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(target, "usr/bin/tool"), &a))
	require.NoError(t, syscall.Stat(filepath.Join(target, "usr/bin/tool2"), &b))
	assert.Equal(t, a.Ino, b.Ino)
	// Times come from the archive.
	fi, err := os.Stat(filepath.Join(target, "etc/passwd"))
	require.NoError(t, err)
	assert.True(t, fi.ModTime().Equal(testTime), "mtime %v", fi.ModTime())
	fi, err = os.Stat(filepath.Join(target, "opt/app"))
	require.NoError(t, err)
	assert.True(t, fi.ModTime().Equal(testTime), "directory mtime %v", fi.ModTime())

	unmount()
	require.NoError(t, d.Remove(ctx, "container"))

	// Unpacking again reuses every layer.
	again, err := u.Unpack(ctx, layers)
	require.NoError(t, err)
	assert.Equal(t, top, again)
	n := 0
	require.NoError(t, d.Walk(ctx, func(context.Context, overlay.Info) error { n++; return nil }))
	assert.Equal(t, 3, n, "three committed layers, nothing else")
}

func diffTrees(want, got map[string]string) string {
	var lines []string
	for k, v := range want {
		if got[k] != v {
			lines = append(lines, fmt.Sprintf("%s: want %s, got %s", k, v, got[k]))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: unexpected %s", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestUnpackRejectsWrongDiffID(t *testing.T) {
	ctx := context.Background()
	d, err := overlay.New(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	good := v1Layer(t, layerTar(t, file("a", "a")))
	bad := badDiffID{good}
	_, err = overlay.NewUnpacker(d, nil).Unpack(ctx, []overlay.Layer{bad})
	require.ErrorIs(t, err, overlay.ErrDigestMismatch)
	n := 0
	require.NoError(t, d.Walk(ctx, func(context.Context, overlay.Info) error { n++; return nil }))
	assert.Zero(t, n, "the failed extraction is removed")
}

type badDiffID struct{ overlay.Layer }

func (b badDiffID) DiffID() (h v1Hash, err error) {
	return v1Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}, nil
}

func TestLayerDirs(t *testing.T) {
	_, err := overlay.ApplyLayer(context.Background(), []overlay.Mount{{Type: "bind", Source: "/x", Options: []string{"ro", "rbind"}}}, bytes.NewReader(nil))
	assert.ErrorIs(t, err, overlay.ErrInvalidArgument)
	_, err = overlay.ApplyLayer(context.Background(), []overlay.Mount{{Type: "overlay", Options: []string{"lowerdir=/a:/b"}}}, bytes.NewReader(nil))
	assert.ErrorIs(t, err, overlay.ErrInvalidArgument)
	_, err = overlay.ApplyLayer(context.Background(), nil, bytes.NewReader(nil))
	assert.ErrorIs(t, err, overlay.ErrInvalidArgument)
}
