package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/internal/testutil"
)

// TestTransportAttributesErrors: a failing operation aborts the whole
// transaction, and the error names that operation; the connection stays
// usable.
func TestTransportAttributesErrors(t *testing.T) {
	testutil.RequireRoot(t)
	ns, err := netns.New(t.TempDir(), "tx")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ns.Remove()) })
	c, err := dial(ns.Path(), "podkit_tx", minBufferSize)
	require.NoError(t, err)
	defer c.close()

	var b batch
	b.addTable()
	b.addChain("a", nil)
	b.flushChain("missing")
	b.addChain("b", nil)
	err = c.run(&b)
	require.ErrorIs(t, err, unix.ENOENT)
	assert.Contains(t, err.Error(), "flush chain missing")
	_, _, exists, err := c.objects()
	require.NoError(t, err)
	assert.False(t, exists, "the transaction was aborted as a whole")

	b = batch{}
	b.addTable()
	b.addChain("a", nil)
	require.NoError(t, c.run(&b), "the connection still works")
	chains, _, exists, err := c.objects()
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, []string{"a"}, chains)
	require.NoError(t, c.deleteTable())
	require.NoError(t, c.deleteTable(), "deleting a missing table is fine")
}
