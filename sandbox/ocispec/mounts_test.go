package ocispec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
)

// fakeMounts answers LookupMount with fixed optional fields.
func fakeMounts(optional string) func(string) (*mountinfo.Info, error) {
	return func(p string) (*mountinfo.Info, error) {
		return &mountinfo.Info{Mountpoint: "/", Optional: optional}, nil
	}
}

// destinations lists the mount destinations of a spec.
func destinations(ms []specs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Destination)
	}
	return out
}

func mountAt(t *testing.T, ms []specs.Mount, dst string) specs.Mount {
	t.Helper()
	for _, m := range ms {
		if m.Destination == dst {
			return m
		}
	}
	t.Fatalf("no mount at %s in %v", dst, destinations(ms))
	return specs.Mount{}
}

func TestMountsOrderAndDefaults(t *testing.T) {
	in := testInput(t)
	dirs := hostDirs(t, "a", "b", "c", "d")
	in.Container.Mounts = []sandbox.Mount{
		{ContainerPath: "/data/logs/app", HostPath: dirs[0]},
		{ContainerPath: "/data", HostPath: dirs[1], ReadOnly: true},
		{ContainerPath: "/cache", HostPath: dirs[2]},
		{ContainerPath: "/data/logs/", HostPath: dirs[3]},
	}
	files := hostFiles(t, "hostname", "hosts", "resolv.conf")
	in.HostnamePath, in.HostsPath, in.ResolvConfPath = files[0], files[1], files[2]
	s, err := Generate(in)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys", "/sys/fs/cgroup",
		// depth 1, in input order; then depth 2; then depth 3
		"/data", "/cache", "/data/logs", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/data/logs/app",
	}, destinations(s.Mounts))

	assert.Equal(t, specs.Mount{Destination: "/data", Type: "bind", Source: dirs[1], Options: []string{"rbind", "rprivate", "ro"}}, mountAt(t, s.Mounts, "/data"))
	assert.Equal(t, []string{"rbind", "rprivate", "rw"}, mountAt(t, s.Mounts, "/cache").Options)
	assert.Equal(t, specs.Mount{Destination: "/etc/hosts", Type: "bind", Source: files[1], Options: []string{"rbind", "rprivate", "rw"}}, mountAt(t, s.Mounts, "/etc/hosts"))
	assert.Equal(t, specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}, mountAt(t, s.Mounts, "/dev/shm"))
	assert.Equal(t, []string{"nosuid", "noexec", "nodev", "ro"}, mountAt(t, s.Mounts, "/sys").Options)
	assert.Equal(t, specs.Mount{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}}, mountAt(t, s.Mounts, "/sys/fs/cgroup"))
	assert.Equal(t, []string{"nosuid", "strictatime", "mode=755", "size=65536k"}, mountAt(t, s.Mounts, "/dev").Options)
	assert.Equal(t, []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}, mountAt(t, s.Mounts, "/dev/pts").Options)
	assert.Empty(t, s.Linux.RootfsPropagation)
}

func TestMountsSandboxFiles(t *testing.T) {
	files := hostFiles(t, "hosts", "resolv.conf")
	shm := hostDirs(t, "shm")[0]
	vol := hostDirs(t, "myhosts")[0]

	t.Run("shm bind replaces the tmpfs; etc files read-only with a read-only rootfs", func(t *testing.T) {
		in := testInput(t)
		in.Container.Security.ReadOnlyRootfs = true
		in.HostsPath, in.ResolvConfPath, in.ShmPath = files[0], files[1], shm
		s, err := Generate(in)
		require.NoError(t, err)
		assert.Equal(t, specs.Mount{Destination: "/dev/shm", Type: "bind", Source: shm, Options: []string{"rbind", "rprivate", "rw"}}, mountAt(t, s.Mounts, "/dev/shm"))
		assert.Equal(t, 1, countDst(s.Mounts, "/dev/shm"))
		assert.Equal(t, []string{"rbind", "rprivate", "ro"}, mountAt(t, s.Mounts, "/etc/hosts").Options)
		assert.Equal(t, []string{"rbind", "rprivate", "ro"}, mountAt(t, s.Mounts, "/etc/resolv.conf").Options)
		assert.Equal(t, 0, countDst(s.Mounts, "/etc/hostname"), "empty path skips the mount")
		assert.True(t, s.Root.Readonly)
	})
	t.Run("a volume wins over a sandbox file", func(t *testing.T) {
		in := testInput(t)
		in.HostsPath = files[0]
		in.Container.Mounts = []sandbox.Mount{{ContainerPath: "/etc/hosts", HostPath: vol}}
		s, err := Generate(in)
		require.NoError(t, err)
		assert.Equal(t, 1, countDst(s.Mounts, "/etc/hosts"))
		assert.Equal(t, vol, mountAt(t, s.Mounts, "/etc/hosts").Source)
	})
	t.Run("a /dev volume drops the default mounts under /dev", func(t *testing.T) {
		in := testInput(t)
		in.ShmPath = shm
		in.Container.Mounts = []sandbox.Mount{{ContainerPath: "/dev", HostPath: vol}}
		s, err := Generate(in)
		require.NoError(t, err)
		assert.Equal(t, []string{"/proc", "/sys", "/sys/fs/cgroup", "/dev", "/dev/shm"}, destinations(s.Mounts))
	})
	t.Run("missing sandbox file", func(t *testing.T) {
		in := testInput(t)
		in.ResolvConfPath = filepath.Join(t.TempDir(), "gone")
		_, err := Generate(in)
		require.ErrorIs(t, err, sandbox.ErrInvalid)
		assert.ErrorContains(t, err, "ResolvConfPath")
	})
}

func countDst(ms []specs.Mount, dst string) int {
	n := 0
	for _, m := range ms {
		if m.Destination == dst {
			n++
		}
	}
	return n
}

func TestMountPropagation(t *testing.T) {
	dirs := hostDirs(t, "a", "b")
	tests := []struct {
		name     string
		props    []sandbox.Propagation
		optional string
		want     []string // propagation option per volume
		wantRoot string
		wantErr  string
	}{
		{name: "none and empty are rprivate", props: []sandbox.Propagation{sandbox.PropagationPrivate, ""}, want: []string{"rprivate", "rprivate"}},
		{name: "host to container on a shared mount", props: []sandbox.Propagation{sandbox.PropagationHostToContainer}, optional: "shared:1",
			want: []string{"rslave"}, wantRoot: "rslave"},
		{name: "host to container on a slave mount", props: []sandbox.Propagation{sandbox.PropagationHostToContainer}, optional: "master:3",
			want: []string{"rslave"}, wantRoot: "rslave"},
		{name: "bidirectional", props: []sandbox.Propagation{sandbox.PropagationBidirectional}, optional: "shared:7 master:2",
			want: []string{"rshared"}, wantRoot: "rshared"},
		{name: "rshared root wins over rslave", props: []sandbox.Propagation{sandbox.PropagationBidirectional, sandbox.PropagationHostToContainer}, optional: "shared:7",
			want: []string{"rshared", "rslave"}, wantRoot: "rshared"},
		{name: "host to container on a private mount", props: []sandbox.Propagation{sandbox.PropagationHostToContainer}, wantErr: "shared or slave"},
		{name: "bidirectional on a slave mount", props: []sandbox.Propagation{sandbox.PropagationBidirectional}, optional: "master:1", wantErr: "not shared"},
		{name: "unknown", props: []sandbox.Propagation{"Sideways"}, wantErr: "unknown propagation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.LookupMount = fakeMounts(tt.optional)
			for i, p := range tt.props {
				in.Container.Mounts = append(in.Container.Mounts, sandbox.Mount{ContainerPath: "/v" + string(rune('0'+i)), HostPath: dirs[i], Propagation: p})
			}
			s, err := Generate(in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, sandbox.ErrInvalid)
				assert.ErrorContains(t, err, tt.wantErr)
				assert.ErrorContains(t, err, "Mounts[0]")
				return
			}
			require.NoError(t, err)
			for i, want := range tt.want {
				assert.Equal(t, []string{"rbind", want, "rw"}, mountAt(t, s.Mounts, "/v"+string(rune('0'+i))).Options)
			}
			assert.Equal(t, tt.wantRoot, s.Linux.RootfsPropagation)
		})
	}
}

func TestMountLookupError(t *testing.T) {
	in := testInput(t)
	in.LookupMount = func(string) (*mountinfo.Info, error) { return nil, errors.New("boom") }
	in.Container.Mounts = []sandbox.Mount{{ContainerPath: "/v", HostPath: hostDirs(t, "v")[0], Propagation: sandbox.PropagationBidirectional}}
	_, err := Generate(in)
	assert.ErrorContains(t, err, "boom")
}

func TestMountValidation(t *testing.T) {
	dir := hostDirs(t, "ok")[0]
	tests := []struct {
		name    string
		mounts  []sandbox.Mount
		wantErr string
	}{
		{name: "relative container path", mounts: []sandbox.Mount{{ContainerPath: "data", HostPath: dir}}, wantErr: "Mounts[0].ContainerPath"},
		{name: "empty container path", mounts: []sandbox.Mount{{HostPath: dir}}, wantErr: "Mounts[0].ContainerPath"},
		{name: "root container path", mounts: []sandbox.Mount{{ContainerPath: "/", HostPath: dir}}, wantErr: "root directory"},
		{name: "duplicate container path", mounts: []sandbox.Mount{{ContainerPath: "/a", HostPath: dir}, {ContainerPath: "/a/", HostPath: dir}}, wantErr: "Mounts[1].ContainerPath"},
		{name: "relative host path", mounts: []sandbox.Mount{{ContainerPath: "/a", HostPath: "rel"}}, wantErr: "Mounts[0] host path"},
		{name: "missing host path", mounts: []sandbox.Mount{{ContainerPath: "/a", HostPath: dir}, {ContainerPath: "/b", HostPath: filepath.Join(dir, "missing")}}, wantErr: "Mounts[1] host path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Container.Mounts = tt.mounts
			_, err := Generate(in)
			require.ErrorIs(t, err, sandbox.ErrInvalid)
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestMountSourceSymlinkResolved(t *testing.T) {
	dir := hostDirs(t, "real")[0]
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	in := testInput(t)
	in.Container.Mounts = []sandbox.Mount{{ContainerPath: "/a", HostPath: link}}
	s, err := Generate(in)
	require.NoError(t, err)
	assert.Equal(t, dir, mountAt(t, s.Mounts, "/a").Source)
}

func TestLookupMount(t *testing.T) {
	info, err := LookupMount("/proc/self")
	require.NoError(t, err)
	assert.Equal(t, "/proc", info.Mountpoint)
	assert.Equal(t, "proc", info.FSType)

	info, err = LookupMount("/")
	require.NoError(t, err)
	assert.Equal(t, "/", info.Mountpoint)
}

func TestHasOptional(t *testing.T) {
	assert.True(t, hasOptional("shared:1", "shared:"))
	assert.True(t, hasOptional("master:2 shared:1", "shared:"))
	assert.True(t, hasOptional("master:2", "shared:", "master:"))
	assert.False(t, hasOptional("", "shared:"))
	assert.False(t, hasOptional("unbindable", "shared:", "master:"))
}

// TestMountPropagationRealMounts checks the default LookupMount against
// the kernel: a volume on a shared bind mount may be Bidirectional, one
// on a private mount may not.
func TestMountPropagationRealMounts(t *testing.T) {
	testutil.RequireRoot(t)
	dir := hostDirs(t, "shared")[0]
	require.NoError(t, unix.Mount(dir, dir, "", unix.MS_BIND, ""))
	t.Cleanup(func() {
		require.NoError(t, unix.Unmount(dir, unix.MNT_DETACH))
		infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dir))
		require.NoError(t, err)
		assert.Empty(t, infos, "bind mount left behind")
	})
	vol := filepath.Join(dir, "vol")
	require.NoError(t, os.Mkdir(vol, 0o755))

	generate := func(p sandbox.Propagation) error {
		in := testInput(t)
		in.LookupMount = nil
		in.Container.Mounts = []sandbox.Mount{{ContainerPath: "/v", HostPath: vol, Propagation: p}}
		_, err := Generate(in)
		return err
	}

	require.NoError(t, unix.Mount("", dir, "", unix.MS_PRIVATE, ""))
	assert.ErrorIs(t, generate(sandbox.PropagationBidirectional), sandbox.ErrInvalid)
	assert.ErrorIs(t, generate(sandbox.PropagationHostToContainer), sandbox.ErrInvalid)
	assert.NoError(t, generate(sandbox.PropagationPrivate))

	require.NoError(t, unix.Mount("", dir, "", unix.MS_SHARED, ""))
	assert.NoError(t, generate(sandbox.PropagationBidirectional))
	assert.NoError(t, generate(sandbox.PropagationHostToContainer))
}
