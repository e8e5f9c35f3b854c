package volume

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func hostPathVolume(name, p string, typ *corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: typ}}}
}

func TestHostPathTypes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "dir")
	fileP := filepath.Join(base, "file")
	sock := filepath.Join(base, "sock")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(fileP, []byte("x"), 0o600))
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(dir, link))

	ht := func(v corev1.HostPathType) *corev1.HostPathType { return &v }
	for _, tc := range []struct {
		name    string
		path    string
		typ     *corev1.HostPathType
		wantErr string
		check   func(t *testing.T, p string)
	}{
		{name: "unset, existing file", path: fileP},
		{name: "unset, missing → directory", path: filepath.Join(base, "new-unset"), check: isDirMode(0)},
		{name: "empty type string", path: dir, typ: ht(corev1.HostPathUnset)},
		{name: "Directory", path: dir, typ: ht(corev1.HostPathDirectory)},
		{name: "Directory via symlink", path: link, typ: ht(corev1.HostPathDirectory)},
		{name: "Directory, is a file", path: fileP, typ: ht(corev1.HostPathDirectory), wantErr: "hostPath type check failed: " + fileP + " is not a directory"},
		{name: "Directory, missing", path: filepath.Join(base, "nope"), typ: ht(corev1.HostPathDirectory), wantErr: "is not a directory"},
		{name: "DirectoryOrCreate, exists", path: dir, typ: ht(corev1.HostPathDirectoryOrCreate), check: isDirMode(0o700)},
		{name: "DirectoryOrCreate, creates 0755", path: filepath.Join(base, "made/deep"), typ: ht(corev1.HostPathDirectoryOrCreate), check: isDirMode(0o755)},
		{name: "DirectoryOrCreate, is a file", path: fileP, typ: ht(corev1.HostPathDirectoryOrCreate), wantErr: "is not a directory"},
		{name: "File", path: fileP, typ: ht(corev1.HostPathFile)},
		{name: "File, is a directory", path: dir, typ: ht(corev1.HostPathFile), wantErr: "hostPath type check failed: " + dir + " is not a file"},
		{name: "FileOrCreate, creates 0644", path: filepath.Join(base, "newfile"), typ: ht(corev1.HostPathFileOrCreate), check: isFileMode(0o644)},
		{name: "FileOrCreate, exists", path: fileP, typ: ht(corev1.HostPathFileOrCreate), check: isFileMode(0o600)},
		{name: "FileOrCreate, is a directory", path: dir, typ: ht(corev1.HostPathFileOrCreate), wantErr: "is not a file"},
		{name: "Socket", path: sock, typ: ht(corev1.HostPathSocket)},
		{name: "Socket, is a file", path: fileP, typ: ht(corev1.HostPathSocket), wantErr: "hostPath type check failed: " + fileP + " is not a socket file"},
		{name: "CharDevice", path: "/dev/null", typ: ht(corev1.HostPathCharDev)},
		{name: "CharDevice, is a file", path: fileP, typ: ht(corev1.HostPathCharDev), wantErr: "is not a character device"},
		{name: "BlockDevice, is a char device", path: "/dev/null", typ: ht(corev1.HostPathBlockDev), wantErr: "hostPath type check failed: /dev/null is not a block device"},
		{name: "invalid type", path: dir, typ: ht("Pipe"), wantErr: "Pipe is an invalid volume type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestManager(t)
			paths, err := env.m.Setup(context.Background(), testPod(hostPathVolume("host", tc.path, tc.typ)))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				if errors.Is(err, ErrHostPathType) {
					assert.ErrorContains(t, err, "hostPath type check failed")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.path, paths["host"], "a hostPath volume is the host path itself")
			if tc.check != nil {
				tc.check(t, tc.path)
			}
		})
	}
}

func isDirMode(perm os.FileMode) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		if perm != 0 {
			assert.Equal(t, perm, fi.Mode().Perm())
		}
	}
}

func isFileMode(perm os.FileMode) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular())
		assert.Equal(t, perm, fi.Mode().Perm())
	}
}

func TestHostPathSentinel(t *testing.T) {
	env := newTestManager(t)
	_, err := env.m.Setup(context.Background(), testPod(hostPathVolume("h", "/dev/null", ptr.To(corev1.HostPathDirectory))))
	require.ErrorIs(t, err, ErrHostPathType)
	require.EqualError(t, err, `MountVolume.SetUp failed for volume "h" : hostPath type check failed: /dev/null is not a directory`)
}
