package overlay_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/overlay"
)

// sandbox lays out base/{upper,lower,outside}: the lower layer holds
// symbolic links that point outside, and outside holds a secret the
// layers must never reach.
type sandbox struct {
	base, upper, lower, outside string
}

func newSandbox(t testing.TB) sandbox {
	t.Helper()
	base := t.TempDir()
	s := sandbox{base: base, upper: filepath.Join(base, "upper"), lower: filepath.Join(base, "lower"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{s.upper, s.lower, s.outside} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.outside, "secret"), []byte("secret"), 0o600))
	require.NoError(t, os.Symlink("../outside", filepath.Join(s.lower, "lowerlink")))
	require.NoError(t, os.Symlink("/", filepath.Join(s.lower, "rootlink")))
	require.NoError(t, os.WriteFile(filepath.Join(s.lower, "plain"), []byte("p"), 0o644))
	return s
}

// untouched fails t if anything changed outside upper.
func (s sandbox) untouched(t testing.TB) {
	t.Helper()
	entries, err := os.ReadDir(s.base)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"upper", "lower", "outside"}, names)
	entries, err = os.ReadDir(s.outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing new outside")
	b, err := os.ReadFile(filepath.Join(s.outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "secret", string(b))
	entries, err = os.ReadDir(s.lower)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "the lower layer is read-only")
}

func TestApplyRejectsUnsafeEntries(t *testing.T) {
	cases := []struct {
		name    string
		entries []entry
	}{
		{"dot-dot", []entry{file("../escape", "x")}},
		{"absolute", []entry{file("/etc/escape", "x")}},
		{"dot-dot inside", []entry{file("a/../../escape", "x")}},
		{"dot-dot dir", []entry{dir("../outside/newdir")}},
		{"through own symlink", []entry{symlink("evil", "../outside"), file("evil/pwned", "x")}},
		{"through absolute symlink", []entry{symlink("evil", "/"), dir("evil/tmp")}},
		{"through symlink to dot-dot", []entry{symlink("evil", "../../../../../../.."), file("evil/tmp/pwned", "x")}},
		{"hardlink out", []entry{hardlink("x", "../outside/secret")}},
		{"hardlink absolute", []entry{hardlink("x", "/etc/passwd")}},
		{"hardlink through symlink", []entry{symlink("evil", "../outside"), hardlink("x", "evil/secret")}},
		{"through lower symlink", []entry{file("lowerlink/pwned", "x")}},
		{"through lower root symlink", []entry{dir("rootlink/tmp")}},
		{"hardlink through lower symlink", []entry{hardlink("x", "lowerlink/secret")}},
		{"whiteout through symlink", []entry{symlink("evil", "../outside"), whiteout("evil/.wh.secret")}},
		{"opaque through symlink", []entry{symlink("evil", "../outside"), whiteout("evil/.wh..wh..opq")}},
		{"whiteout through lower symlink", []entry{whiteout("lowerlink/.wh.secret")}},
		{"whiteout of dot-dot", []entry{whiteout(".wh..")}},
		{"whiteout escaping", []entry{whiteout("../outside/.wh.secret")}},
		{"symlink then dot-dot", []entry{symlink("evil", "."), file("evil/../../outside/pwned", "x")}},
		{"root as file", []entry{file(".", "x")}},
		{"hardlink to directory", []entry{dir("d"), hardlink("x", "d")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			_, err := overlay.Apply(context.Background(), s.upper, []string{s.lower}, bytes.NewReader(layerTar(t, tc.entries...)))
			require.Error(t, err)
			assert.ErrorIs(t, err, overlay.ErrUnsafePath)
			s.untouched(t)
		})
	}
}

func TestApplySafeLookalikes(t *testing.T) {
	// Paths that look odd but stay inside are fine.
	s := newSandbox(t)
	_, err := overlay.Apply(context.Background(), s.upper, []string{s.lower}, bytes.NewReader(layerTar(t,
		file("./a/../b", "b"),
		file("c/./d", "d"),
		symlink("abs", "/etc/passwd"), // stored, never followed
		symlink("up", "../../.."),
		hardlink("plain-link", "plain"), // copied up from the lower layer
	)))
	require.NoError(t, err)
	s.untouched(t)
	b, err := os.ReadFile(filepath.Join(s.upper, "b"))
	require.NoError(t, err)
	assert.Equal(t, "b", string(b))
	target, err := os.Readlink(filepath.Join(s.upper, "abs"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", target)
	b, err = os.ReadFile(filepath.Join(s.upper, "plain-link"))
	require.NoError(t, err)
	assert.Equal(t, "p", string(b))
}

func TestApplyCancelled(t *testing.T) {
	s := newSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := overlay.Apply(ctx, s.upper, nil, bytes.NewReader(layerTar(t, file("a", "a"))))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestApplyCorruptArchive(t *testing.T) {
	s := newSandbox(t)
	b := layerTar(t, file("a", string(bytes.Repeat([]byte("x"), 4096))))
	_, err := overlay.Apply(context.Background(), s.upper, nil, bytes.NewReader(b[:1000]))
	assert.Error(t, err)
	s.untouched(t)
}

// FuzzApply feeds arbitrary archives to the extractor: whatever it does
// with them, nothing outside the layer directory may change.
func FuzzApply(f *testing.F) {
	seeds := [][]entry{
		{file("a", "a"), dir("d"), symlink("d/l", "../a"), hardlink("h", "a")},
		{symlink("evil", "../outside"), file("evil/pwned", "x")},
		{file("../escape", "x")},
		{hardlink("x", "lowerlink/secret")},
		{whiteout("lowerlink/.wh.secret"), whiteout("d/.wh..wh..opq")},
		{symlink("evil", "."), file("evil/../../outside/pwned", "x")},
		{file("lowerlink/x", "x")},
	}
	for _, s := range seeds {
		f.Add(layerTar(f, s...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newSandbox(t)
		_, _ = overlay.Apply(context.Background(), s.upper, []string{s.lower}, bytes.NewReader(data))
		s.untouched(t)
	})
}
