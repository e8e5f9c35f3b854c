package native_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox/native"
)

// TestRemoveRoot keeps a root that still holds a sandbox (a later runtime
// adopts it from there) and removes one that holds nothing any more, once
// the supervisor has exited.
func TestRemoveRoot(t *testing.T) {
	n := newNode(t)
	ctx := t.Context()
	r := n.runtime(t)
	sb, err := r.RunPodSandbox(ctx, podConfig("kept"))
	require.NoError(t, err)
	require.ErrorIs(t, r.RemoveRoot(ctx), native.ErrRootInUse, "not closed")
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.RemoveRoot(ctx), native.ErrRootInUse, "a sandbox is left")
	assert.DirExists(t, filepath.Join(n.root, "sandboxes", sb.ID))

	r = n.runtime(t)
	sbs, _, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, sbs, 1, "the kept root's sandbox is adopted")
	assert.Equal(t, sb.ID, sbs[0].ID)
	require.NoError(t, r.RemovePodSandbox(ctx, sb.ID))
	require.NoError(t, r.Close())

	// Something the runtime does not know keeps the root.
	stray := filepath.Join(n.root, "stray")
	require.NoError(t, os.WriteFile(stray, nil, 0o600))
	require.ErrorIs(t, r.RemoveRoot(ctx), native.ErrRootInUse)
	require.NoError(t, os.Remove(stray))

	require.NoError(t, r.RemoveRoot(ctx))
	assert.NoDirExists(t, n.root)
}
