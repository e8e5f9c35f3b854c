package dns

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ListenFreebind is Listen with IP_FREEBIND on both sockets: the address
// need not exist yet. A node binds its DNS server to its pod bridge's
// gateway before the bridge is created (the bridge appears with the first
// pod); packets are delivered as soon as the address is assigned. With
// port 0 both sockets get the same free port.
func ListenFreebind(ctx context.Context, addr string) (*Sockets, error) {
	lc := net.ListenConfig{Control: func(network, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if network == "udp6" || network == "tcp6" {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_FREEBIND, 1)
				return
			}
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return listen(ctx, lc, addr, " (freebind)")
}
