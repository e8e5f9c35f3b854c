package netns_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/internal/testutil"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return st.Ino
}

func mounted(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

func TestNewDoRemove(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	ns, err := netns.New(dir, "a")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a"), ns.Path())
	require.NoError(t, netns.Check(ns.Path()))
	assert.True(t, mounted(t, ns.Path()))

	var inside uint64
	require.NoError(t, ns.Do(func() error {
		inside = inode(t, fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		return nil
	}))
	assert.Equal(t, inode(t, ns.Path()), inside, "Do runs inside the namespace")
	assert.NotEqual(t, inside, inode(t, "/proc/thread-self/ns/net"), "the caller's thread is untouched")

	want := errors.New("boom")
	assert.ErrorIs(t, ns.Do(func() error { return want }), want, "Do returns fn's error")

	h, err := ns.Handle()
	require.NoError(t, err)
	links, err := h.LinkList()
	h.Close()
	require.NoError(t, err)
	require.Len(t, links, 1, "a new namespace holds only lo")
	assert.Equal(t, "lo", links[0].Attrs().Name)

	require.NoError(t, ns.Remove())
	require.NoError(t, ns.Remove(), "Remove is idempotent")
	assert.False(t, mounted(t, ns.Path()))
	assert.ErrorIs(t, netns.Check(ns.Path()), os.ErrNotExist)
}

func TestNewKeepsTheMainThreadAtHome(t *testing.T) {
	testutil.RequireRoot(t)
	// /proc/self/ns/net follows the main thread; creating namespaces from
	// locked goroutines must never leave it elsewhere.
	home := inode(t, "/proc/self/ns/net")
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Go(func() {
			ns, err := netns.New(dir, fmt.Sprintf("n%d", i))
			if err == nil {
				err = errors.Join(ns.Do(func() error { return nil }), ns.Remove())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, home, inode(t, "/proc/self/ns/net"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestCheckAndOpen(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o644))
	assert.ErrorIs(t, netns.Check(plain), netns.ErrNotNetNS)
	assert.ErrorIs(t, netns.Check(filepath.Join(dir, "missing")), os.ErrNotExist)
	require.NoError(t, netns.Check("/proc/self/ns/net"))
	ns, err := netns.Open("/proc/self/ns/net")
	require.NoError(t, err)
	require.NoError(t, ns.Remove(), "Remove leaves namespaces it did not pin alone")
	require.NoError(t, netns.Check("/proc/self/ns/net"))
	_, err = netns.Open(plain)
	assert.ErrorIs(t, err, netns.ErrNotNetNS)
}

func TestNewRejectsBadNamesAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", "a/b", ".", ".."} {
		_, err := netns.New(dir, name)
		assert.Error(t, err, "%q", name)
	}
	testutil.RequireRoot(t)
	ns, err := netns.New(dir, "dup")
	require.NoError(t, err)
	defer ns.Remove()
	_, err = netns.New(dir, "dup")
	assert.ErrorIs(t, err, os.ErrExist)
}

func TestRemoveOfMissingPathIsNoError(t *testing.T) {
	assert.NoError(t, netns.Remove(filepath.Join(t.TempDir(), "never")))
}
