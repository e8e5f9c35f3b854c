package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/podkit/podkit/cni/netns"
)

// Sockets are the UDP and TCP listeners a Server serves, bound to the same
// address and port.
type Sockets struct {
	UDP net.PacketConn
	TCP net.Listener
}

// Close closes both sockets.
func (s *Sockets) Close() error {
	var errs []error
	if s.UDP != nil {
		errs = append(errs, s.UDP.Close())
	}
	if s.TCP != nil {
		errs = append(errs, s.TCP.Close())
	}
	return errors.Join(errs...)
}

// Addr is the UDP socket's address (the TCP one has the same).
func (s *Sockets) Addr() net.Addr { return s.UDP.LocalAddr() }

// portAttempts bounds the retries of Listen when port 0 gave a UDP port
// whose TCP twin is taken.
const portAttempts = 16

// Listen opens UDP and TCP sockets on addr ("ip:port"). With port 0 both
// get the same free port.
func Listen(ctx context.Context, addr string) (*Sockets, error) {
	return listen(ctx, net.ListenConfig{}, addr, "")
}

// listen opens the UDP socket on addr with lc, then the TCP one on the
// port it got, retrying (with port 0) when that TCP port is taken. how
// qualifies errors (" (freebind)").
func listen(ctx context.Context, lc net.ListenConfig, addr, how string) (*Sockets, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dns: listen address %q: %w", addr, err)
	}
	for attempt := 0; ; attempt++ {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			return nil, fmt.Errorf("dns: listen udp %s%s: %w", addr, how, err)
		}
		udpPort := pc.LocalAddr().(*net.UDPAddr).Port
		ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(udpPort)))
		if err == nil {
			return &Sockets{UDP: pc, TCP: ln}, nil
		}
		pc.Close()
		if port != "0" || attempt+1 >= portAttempts {
			return nil, fmt.Errorf("dns: listen tcp %s%s: %w", net.JoinHostPort(host, strconv.Itoa(udpPort)), how, err)
		}
	}
}

// ListenIn opens the sockets inside the network namespace at netnsPath (a
// pinned namespace or /proc/<pid>/ns/net): the sockets are created on a
// thread switched into it and stay bound to that namespace afterwards, so
// the Server serves them from ordinary goroutines. addr must be local to
// that namespace (e.g. 10.96.0.10:53 assigned to its loopback or a dummy
// interface).
func ListenIn(ctx context.Context, netnsPath, addr string) (*Sockets, error) {
	var s *Sockets
	err := netns.Do(netnsPath, func() error {
		var err error
		s, err = Listen(ctx, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dns: listen in %s: %w", netnsPath, err)
	}
	return s, nil
}
