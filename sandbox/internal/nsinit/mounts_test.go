package nsinit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestReadonlyRootfs(t *testing.T) {
	r := newRootfs(t)
	spec := testSpec(r.path, "write", "/etc/new", "x")
	spec.Root.Readonly = true
	c, err := create(t, spec, nil)
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	assert.Equal(t, 1, c.wait())
	assert.Contains(t, c.errors(), "read-only file system")
	assert.NoFileExists(t, filepath.Join(r.upper, "etc/new"))

	// Mounts on top of a read-only root stay writable.
	spec = testSpec(r.path, "write", "/dev/shm/x", "y")
	spec.Root.Readonly = true
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	assert.Equal(t, "ok\n", out)
}

func TestWritesLandInUpperdir(t *testing.T) {
	r := newRootfs(t)
	out, status := run(t, testSpec(r.path, "write", "/tmp/hello", "world"))
	require.Equal(t, 0, status, out)
	b, err := os.ReadFile(filepath.Join(r.upper, "tmp/hello"))
	require.NoError(t, err)
	assert.Equal(t, "world", string(b))
	assert.NoFileExists(t, filepath.Join(lowerDir(t), "tmp/hello"))
}

func TestVolumes(t *testing.T) {
	r := newRootfs(t)
	rw, ro := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ro, "existing"), []byte("host data"), 0o644))
	hostFile := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(hostFile, []byte("nameserver 127.0.0.1\n"), 0o644))
	withVolumes := func(args ...string) *specs.Spec {
		s := testSpec(r.path, args...)
		s.Mounts = append(s.Mounts,
			specs.Mount{Destination: "/vol/rw", Type: "bind", Source: rw, Options: []string{"rbind", "rprivate"}},
			specs.Mount{Destination: "/vol/ro", Type: "bind", Source: ro, Options: []string{"rbind", "ro", "nosuid", "nodev"}},
			specs.Mount{Destination: "/etc/resolv.conf", Type: "bind", Source: hostFile, Options: []string{"bind", "ro"}},
		)
		return s
	}

	out, status := run(t, withVolumes("write", "/vol/rw/f", "from container"))
	require.Equal(t, 0, status, out)
	b, err := os.ReadFile(filepath.Join(rw, "f"))
	require.NoError(t, err)
	assert.Equal(t, "from container", string(b))

	out, status = run(t, withVolumes("cat", "/vol/ro/existing"))
	require.Equal(t, 0, status)
	assert.Equal(t, "host data", out)

	c, err := create(t, withVolumes("write", "/vol/ro/f", "x"), nil)
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	assert.Equal(t, 1, c.wait())
	assert.Contains(t, c.errors(), "read-only file system")
	assert.NoFileExists(t, filepath.Join(ro, "f"))

	// A file volume gets a file mount point.
	out, status = run(t, withVolumes("cat", "/etc/resolv.conf"))
	require.Equal(t, 0, status)
	assert.Equal(t, "nameserver 127.0.0.1\n", out)
	fi, err := os.Stat(filepath.Join(r.upper, "etc/resolv.conf"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}

func TestRecursiveReadOnlyVolume(t *testing.T) {
	r := newRootfs(t)
	vol := t.TempDir()
	sub := filepath.Join(vol, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, unix.Mount("tmpfs", sub, "tmpfs", 0, ""))
	t.Cleanup(func() { require.NoError(t, unix.Unmount(sub, unix.MNT_DETACH)) })
	for _, tc := range []struct {
		opts []string
		want int
	}{
		{[]string{"rbind", "ro"}, 0}, // plain ro leaves submounts writable
		{[]string{"rbind", "rro"}, 1},
	} {
		spec := testSpec(r.path, "write", "/vol/sub/f", "x")
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/vol", Type: "bind", Source: vol, Options: tc.opts})
		c, err := create(t, spec, nil)
		require.NoError(t, err)
		require.NoError(t, Start(context.Background(), c.stateDir))
		assert.Equal(t, tc.want, c.wait(), "%v: %s", tc.opts, c.errors())
	}
}

func TestMountDestinationCannotEscapeRootfs(t *testing.T) {
	r := newRootfs(t)
	host := t.TempDir()
	// An absolute symlink in the image pointing at a host directory.
	require.NoError(t, os.Symlink(host, filepath.Join(r.path, "escape")))
	spec := testSpec(r.path, "ls", "/escape")
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/escape/sub", Type: "tmpfs", Source: "tmpfs"})
	out, status := run(t, spec)
	require.Equal(t, 0, status)
	// The mount point was made inside the rootfs, where the link points
	// when resolved with the rootfs as /.
	assert.Equal(t, []string{"/escape/sub"}, lines(out))
	assert.DirExists(t, filepath.Join(r.upper, strings.TrimPrefix(host, "/"), "sub"))
	entries, err := os.ReadDir(host)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing may be created on the host")
}

func TestMaskedAndReadonlyPaths(t *testing.T) {
	r := newRootfs(t)
	checked := 0
	for _, p := range []string{"/proc/kcore", "/proc/timer_list", "/proc/keys"} {
		if _, err := os.Stat(p); err != nil {
			continue // not in this kernel
		}
		checked++
		out, status := run(t, testSpec(r.path, "cat", p))
		require.Equal(t, 0, status, p)
		assert.Empty(t, out, "%s must read as /dev/null", p)
	}
	require.NotZero(t, checked)
	out, status := run(t, testSpec(r.path, "ls", "/sys/firmware"))
	require.Equal(t, 0, status)
	assert.Empty(t, out)

	c, err := create(t, testSpec(r.path, "write", "/proc/sys/kernel/domainname", "x"), nil)
	require.NoError(t, err)
	require.NoError(t, Start(context.Background(), c.stateDir))
	assert.Equal(t, 1, c.wait())
	assert.Contains(t, c.errors(), "read-only file system")
}
