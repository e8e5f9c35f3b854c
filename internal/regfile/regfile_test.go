package regfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/regfile"
)

func TestOpenAndWriteFileBehaveLikeOS(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")

	require.NoError(t, regfile.WriteFile(p, []byte("one"), 0o640))
	require.NoError(t, regfile.WriteFile(p, []byte("2"), 0o640)) // truncates
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "2", string(got))

	f, err := regfile.Open(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("3")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "23", string(got))

	_, err = regfile.Open(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, p, pe.Path)
	assert.True(t, errors.Is(err, fs.ErrExist))

	_, err = regfile.Open(filepath.Join(dir, "missing", "f"), os.O_RDONLY, 0)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestOpenSetsCloseOnExec(t *testing.T) {
	f, err := regfile.Open(filepath.Join(t.TempDir(), "f"), os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	defer f.Close()
	flags, err := fcntlGetfd(f.Fd())
	require.NoError(t, err)
	assert.NotZero(t, flags&1, "FD_CLOEXEC")
}
