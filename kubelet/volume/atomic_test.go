package volume

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tsDirRE = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`)

func atomicDir(t *testing.T) (*testEnv, string) {
	env := newTestManager(t)
	dir := filepath.Join(t.TempDir(), "vol")
	require.NoError(t, os.Mkdir(dir, 0o777))
	return env, dir
}

func TestWriteAtomicLayout(t *testing.T) {
	env, dir := atomicDir(t)
	wrote, err := env.m.writeAtomic(dir, map[string]file{
		"a":       {data: []byte("A"), mode: 0o644},
		"sub/b":   {data: []byte("B"), mode: 0o400},
		"sub/c/d": {data: []byte("D"), mode: 0o755},
		"./e//g":  {data: []byte("G"), mode: 0o600},
	}, nil)
	require.NoError(t, err)
	assert.True(t, wrote)

	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	require.NoError(t, err)
	assert.Regexp(t, tsDirRE, ts)
	assert.Equal(t, "..2024_05_06_07_08_09.", ts[:len("..2024_05_06_07_08_09.")], "named after the Clock")
	assert.Equal(t, os.FileMode(0o755), modeOf(t, filepath.Join(dir, ts)))

	for name, target := range map[string]string{"a": "..data/a", "sub": "..data/sub", "e": "..data/e"} {
		got, err := os.Readlink(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, target, got, name)
	}
	assert.Equal(t, "A", readFile(t, filepath.Join(dir, "a")))
	assert.Equal(t, "B", readFile(t, filepath.Join(dir, "sub/b")))
	assert.Equal(t, "D", readFile(t, filepath.Join(dir, "sub/c/d")))
	assert.Equal(t, "G", readFile(t, filepath.Join(dir, "e/g")))
	assert.Equal(t, os.FileMode(0o644), modeOf(t, filepath.Join(dir, "a")))
	assert.Equal(t, os.FileMode(0o400), modeOf(t, filepath.Join(dir, "sub/b")))
	assert.Equal(t, os.FileMode(0o755), modeOf(t, filepath.Join(dir, "sub/c/d")))
	_, err = os.Lstat(filepath.Join(dir, "..data_tmp"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestWriteAtomicUpdate(t *testing.T) {
	env, dir := atomicDir(t)
	_, err := env.m.writeAtomic(dir, map[string]file{
		"keep": {data: []byte("1"), mode: 0o644},
		"gone": {data: []byte("x"), mode: 0o644},
		"d/x":  {data: []byte("x"), mode: 0o644},
	}, nil)
	require.NoError(t, err)
	first, _ := os.Readlink(filepath.Join(dir, "..data"))

	// The same payload again: nothing is written.
	env.clock.advance(time.Second)
	wrote, err := env.m.writeAtomic(dir, map[string]file{
		"keep": {data: []byte("1"), mode: 0o644},
		"gone": {data: []byte("x"), mode: 0o644},
		"d/x":  {data: []byte("x"), mode: 0o644},
	}, nil)
	require.NoError(t, err)
	assert.False(t, wrote)
	same, _ := os.Readlink(filepath.Join(dir, "..data"))
	assert.Equal(t, first, same)

	// A changed file and removed keys: a new version, the old one removed.
	wrote, err = env.m.writeAtomic(dir, map[string]file{
		"keep": {data: []byte("2"), mode: 0o644},
	}, nil)
	require.NoError(t, err)
	assert.True(t, wrote)
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	assert.NotEqual(t, first, second)
	assert.Equal(t, []string{second}, dataDirs(t, dir))
	assert.Equal(t, "2", readFile(t, filepath.Join(dir, "keep")))
	for _, p := range []string{"gone", "d"} {
		_, err := os.Lstat(filepath.Join(dir, p))
		assert.ErrorIs(t, err, os.ErrNotExist, p)
	}

	// Only a mode change is a change too.
	wrote, err = env.m.writeAtomic(dir, map[string]file{"keep": {data: []byte("2"), mode: 0o600}}, nil)
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, os.FileMode(0o600), modeOf(t, filepath.Join(dir, "keep")))
}

func TestWriteAtomicRemovesLeftovers(t *testing.T) {
	env, dir := atomicDir(t)
	// An interrupted earlier write left a data directory and a temp link.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "..2020_01_01_00_00_00.123"), 0o755))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "..data_tmp")))
	_, err := env.m.writeAtomic(dir, map[string]file{"k": {data: []byte("v"), mode: 0o644}}, nil)
	require.NoError(t, err)
	cur, _ := os.Readlink(filepath.Join(dir, "..data"))
	assert.Equal(t, []string{cur}, dataDirs(t, dir))
}

func TestWriteAtomicSetPerms(t *testing.T) {
	env, dir := atomicDir(t)
	var got string
	_, err := env.m.writeAtomic(dir, map[string]file{"k": {data: []byte("v"), mode: 0o644}}, func(ts string) error {
		got = ts
		return nil
	})
	require.NoError(t, err)
	cur, _ := os.Readlink(filepath.Join(dir, "..data"))
	assert.Equal(t, filepath.Join(dir, cur), got, "setPerms sees the new data directory")
}

func TestPayloadPathValidation(t *testing.T) {
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		path, err string
	}{
		{"ok", ""},
		{"a/b/c", ""},
		{"..", "must not contain '..'"},
		{"", "must not be empty"},
		{"/abs", "must be relative path"},
		{"a/../b", "must not contain '..'"},
		{"..hidden", "must not start with '..'"},
		{string(long), "filenames must be less than or equal to 255 characters"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := checkPayloadPath(tc.path)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestWriteAtomicRejectsBadPayload(t *testing.T) {
	env, dir := atomicDir(t)
	_, err := env.m.writeAtomic(dir, map[string]file{"../escape": {data: []byte("x"), mode: 0o644}}, nil)
	require.ErrorContains(t, err, "must not contain '..'")
	_, err = env.m.writeAtomic(dir, map[string]file{"k": {data: []byte("x"), mode: 0o4755}}, nil)
	require.ErrorContains(t, err, "invalid mode")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "nothing written for an invalid payload")
}
