package dns

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An address no interface has yet (a node's bridge gateway before its
// first pod) can be bound; UDP and TCP share the port.
func TestListenFreebind(t *testing.T) {
	s, err := ListenFreebind(context.Background(), "10.255.254.253:0")
	require.NoError(t, err)
	defer s.Close()
	udp := s.UDP.LocalAddr().(*net.UDPAddr)
	tcp := s.TCP.Addr().(*net.TCPAddr)
	assert.Equal(t, "10.255.254.253", udp.IP.String())
	assert.NotZero(t, udp.Port)
	assert.Equal(t, udp.Port, tcp.Port)

	_, err = ListenFreebind(context.Background(), "no-port")
	assert.Error(t, err)
}
