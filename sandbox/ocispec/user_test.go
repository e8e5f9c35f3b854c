package ocispec

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

const testPasswd = `root:x:0:0:root:/root:/bin/sh
# a comment line
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin

app:x:1000:1000:App:/home/app:/bin/sh
web:x:1001:33::/var/www:/bin/sh
broken:x:notanumber:1::/:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
`

const testGroup = `root:x:0:
daemon:x:1:
www-data:x:33:
app:x:1000:app
audio:x:29:app,web
video:x:44:web
staff:x:50: app , other
users:x:100:
bad:x:nope:app
nogroup:x:65534:
`

// writeRootfs makes a rootfs directory with the given etc files
// ("" leaves one out).
func writeRootfs(t *testing.T, passwd, group string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	if passwd != "" {
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(passwd), 0o644))
	}
	if group != "" {
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc/group"), []byte(group), 0o644))
	}
	return root
}

func i64(v int64) *int64 { return &v }

func TestResolveUser(t *testing.T) {
	root := writeRootfs(t, testPasswd, testGroup)
	tests := []struct {
		name      string
		imageUser string
		sec       sandbox.SecurityConfig
		want      specs.User
		wantErr   string
	}{
		{name: "no user is root", want: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0}}},
		{name: "uid from passwd gets its gid and groups", imageUser: "1000",
			want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{29, 50, 1000}}},
		{name: "name", imageUser: "app",
			want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{29, 50, 1000}}},
		{name: "name with other gid", imageUser: "web",
			want: specs.User{UID: 1001, GID: 33, AdditionalGids: []uint32{29, 33, 44}}},
		{name: "uid:gid numeric", imageUser: "1000:44",
			want: specs.User{UID: 1000, GID: 44, AdditionalGids: []uint32{29, 44, 50}}},
		{name: "name:group", imageUser: "app:video",
			want: specs.User{UID: 1000, GID: 44, AdditionalGids: []uint32{29, 44, 50}}},
		{name: "uid:group", imageUser: "1001:audio",
			want: specs.User{UID: 1001, GID: 29, AdditionalGids: []uint32{29, 44}}},
		{name: "uid not in passwd gets gid 0", imageUser: "4242",
			want: specs.User{UID: 4242, GID: 0, AdditionalGids: []uint32{0}}},
		{name: "runAsUser overrides image user and its group", imageUser: "app:video", sec: sandbox.SecurityConfig{RunAsUser: i64(1001)},
			want: specs.User{UID: 1001, GID: 33, AdditionalGids: []uint32{29, 33, 44}}},
		{name: "runAsUser and runAsGroup", imageUser: "app", sec: sandbox.SecurityConfig{RunAsUser: i64(1000), RunAsGroup: i64(2000)},
			want: specs.User{UID: 1000, GID: 2000, AdditionalGids: []uint32{29, 50, 2000}}},
		{name: "runAsGroup alone replaces the image group", imageUser: "app:video", sec: sandbox.SecurityConfig{RunAsGroup: i64(7)},
			want: specs.User{UID: 1000, GID: 7, AdditionalGids: []uint32{7, 29, 50}}},
		{name: "runAsUser 0", imageUser: "app", sec: sandbox.SecurityConfig{RunAsUser: i64(0)},
			want: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0}}},
		{name: "supplemental groups merged, sorted, deduplicated", imageUser: "app",
			sec:  sandbox.SecurityConfig{SupplementalGroups: []int64{5000, 29, 1000, 5000}},
			want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{29, 50, 1000, 5000}}},
		{name: "unknown user name", imageUser: "ghost", wantErr: `user "ghost"`},
		{name: "unknown group name", imageUser: "app:ghosts", wantErr: `group "ghosts"`},
		{name: "negative runAsUser", sec: sandbox.SecurityConfig{RunAsUser: i64(-1)}, wantErr: "runAsUser"},
		{name: "runAsUser too large", sec: sandbox.SecurityConfig{RunAsUser: i64(1 << 31)}, wantErr: "runAsUser"},
		{name: "negative runAsGroup", sec: sandbox.SecurityConfig{RunAsGroup: i64(-5)}, wantErr: "runAsGroup"},
		{name: "negative supplemental group", sec: sandbox.SecurityConfig{SupplementalGroups: []int64{-2}}, wantErr: "supplementalGroups"},
		{name: "image uid too large", imageUser: "4294967296", wantErr: "out of range"},
		{name: "image gid too large", imageUser: "0:2147483648", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveUser(root, tt.imageUser, tt.sec)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, sandbox.ErrInvalid)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestResolveUserWithoutEtcFiles(t *testing.T) {
	root := writeRootfs(t, "", "")
	u, err := ResolveUser(root, "1000", sandbox.SecurityConfig{SupplementalGroups: []int64{3}})
	require.NoError(t, err)
	assert.Equal(t, specs.User{UID: 1000, GID: 0, AdditionalGids: []uint32{0, 3}}, u)

	u, err = ResolveUser(root, "1000:1000", sandbox.SecurityConfig{})
	require.NoError(t, err)
	assert.Equal(t, specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000}}, u)

	_, err = ResolveUser(root, "app", sandbox.SecurityConfig{})
	require.ErrorIs(t, err, sandbox.ErrInvalid)
	_, err = ResolveUser(root, "0:staff", sandbox.SecurityConfig{})
	require.ErrorIs(t, err, sandbox.ErrInvalid)
}

func TestResolveUserMissingRootfs(t *testing.T) {
	_, err := ResolveUser(filepath.Join(t.TempDir(), "nope"), "0", sandbox.SecurityConfig{})
	require.ErrorIs(t, err, sandbox.ErrInvalid)
	assert.ErrorContains(t, err, "rootfs")
}

// TestResolveUserSymlinkEscape plants etc/passwd and etc/group links that
// point out of the rootfs at files naming an "evil" user; resolution
// must stay inside the rootfs and never see them.
func TestResolveUserSymlinkEscape(t *testing.T) {
	outside := t.TempDir()
	secretPasswd := filepath.Join(outside, "shadow-passwd")
	secretGroup := filepath.Join(outside, "shadow-group")
	require.NoError(t, os.WriteFile(secretPasswd, []byte("evil:x:6666:6666::/:/bin/sh\nroot:x:0:6666::/:/bin/sh\n"), 0o600))
	require.NoError(t, os.WriteFile(secretGroup, []byte("evilgroup:x:7777:evil,root\n"), 0o600))

	// How many ".." reach the host's / from the rootfs's etc directory.
	root := t.TempDir()
	up := strings.Repeat("../", strings.Count(filepath.Join(root, "etc"), "/"))

	tests := []struct {
		name                 string
		passwdLink, groupLnk string
	}{
		{name: "absolute links", passwdLink: secretPasswd, groupLnk: secretGroup},
		{name: "relative dot-dot links", passwdLink: up + strings.TrimPrefix(secretPasswd, "/"), groupLnk: up + strings.TrimPrefix(secretGroup, "/")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeRootfs(t, "", "")
			require.NoError(t, os.Symlink(tt.passwdLink, filepath.Join(root, "etc/passwd")))
			require.NoError(t, os.Symlink(tt.groupLnk, filepath.Join(root, "etc/group")))
			// The links work on the host: the test would be vacuous otherwise.
			_, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
			require.NoError(t, err)

			_, err = ResolveUser(root, "evil", sandbox.SecurityConfig{})
			require.ErrorIs(t, err, sandbox.ErrInvalid, "the outside passwd must not be read")

			u, err := ResolveUser(root, "0", sandbox.SecurityConfig{})
			require.NoError(t, err)
			assert.Equal(t, specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0}}, u, "outside gid 6666 or group 7777 leaked")

			_, err = ResolveUser(root, "0:evilgroup", sandbox.SecurityConfig{})
			require.ErrorIs(t, err, sandbox.ErrInvalid, "the outside group must not be read")
		})
	}
}

// TestResolveUserSymlinkInsideRoot: an absolute link resolves against
// the rootfs, as it would inside the container.
func TestResolveUserSymlinkInsideRoot(t *testing.T) {
	root := writeRootfs(t, "", testGroup)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/share"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "usr/share/passwd"), []byte(testPasswd), 0o644))
	require.NoError(t, os.Symlink("/usr/share/passwd", filepath.Join(root, "etc/passwd")))
	u, err := ResolveUser(root, "app", sandbox.SecurityConfig{})
	require.NoError(t, err)
	assert.Equal(t, uint32(1000), u.UID)
}

func TestResolveUserRefusesSpecialFiles(t *testing.T) {
	root := writeRootfs(t, "", "")
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "etc/passwd"), 0o644))
	_, err := ResolveUser(root, "app", sandbox.SecurityConfig{})
	require.ErrorIs(t, err, sandbox.ErrInvalid)
	assert.ErrorContains(t, err, "not a regular file")

	root = writeRootfs(t, "", "")
	require.NoError(t, os.Mkdir(filepath.Join(root, "etc/passwd"), 0o755))
	_, err = ResolveUser(root, "app", sandbox.SecurityConfig{})
	require.ErrorIs(t, err, sandbox.ErrInvalid)
}

func TestResolveUserRefusesHugeFiles(t *testing.T) {
	root := writeRootfs(t, "", "")
	f, err := os.Create(filepath.Join(root, "etc/passwd"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxRootFileSize+1))
	require.NoError(t, f.Close())
	_, err = ResolveUser(root, "app", sandbox.SecurityConfig{})
	require.ErrorIs(t, err, sandbox.ErrInvalid)
	assert.ErrorContains(t, err, "larger than")
}
