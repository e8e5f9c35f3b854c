package podkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHostName(t *testing.T) {
	for _, tc := range []struct{ prefix, node string }{
		{"pk", "podkit-node-1"}, {"pk", "podkit-node-2"}, {"podkit-", "a-very-long-node-name.example.com"},
	} {
		n := HostName(tc.prefix, tc.node)
		assert.Len(t, n, 15, "interface names are at most 15 bytes")
		assert.Equal(t, n, HostName(tc.prefix, tc.node), "stable")
	}
	assert.NotEqual(t, HostName("pk", "podkit-node-1"), HostName("pk", "podkit-node-2"), "distinct per node")
}

func TestNodeConfigDefaults(t *testing.T) {
	c := NodeConfig{Name: "n1"}
	assert.Error(t, c.defaults(), "a client is required")
}
