package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/cni/netns"
)

// Echo servers for pods: cnitest.EchoServer echoes TCP on a random port;
// services need a fixed target port, UDP too, and answers naming the
// backend that served.

// serve answers on ip:port (TCP or UDP) in the namespace at nsPath with
// "<ip>|<peer>": who served, and the source address it saw.
func serve(t *testing.T, nsPath string, ip netip.Addr, port int, proto corev1.Protocol) {
	t.Helper()
	addr := netip.AddrPortFrom(ip, uint16(port)).String()
	var wg sync.WaitGroup
	var closer interface{ Close() error }
	err := netns.Do(nsPath, func() error {
		if proto == corev1.ProtocolUDP {
			pc, err := net.ListenPacket("udp4", addr)
			if err != nil {
				return err
			}
			closer = pc
			wg.Go(func() {
				buf := make([]byte, 512)
				for {
					_, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					_, _ = pc.WriteTo([]byte(ip.String()+"|"+from.String()), from)
				}
			})
			return nil
		}
		ln, err := net.Listen("tcp4", addr)
		if err != nil {
			return err
		}
		closer = ln
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(ip.String() + "|" + c.RemoteAddr().String()))
				_ = c.Close()
			}
		})
		return nil
	})
	require.NoError(t, err, "listen on %s in %s", addr, nsPath)
	t.Cleanup(func() {
		_ = closer.Close()
		wg.Wait()
	})
}

// ask connects from the namespace at nsPath to to and returns who served
// and the source address the server saw.
func ask(ctx context.Context, nsPath string, to netip.AddrPort, proto corev1.Protocol) (netip.Addr, netip.AddrPort, error) {
	network := "tcp4"
	if proto == corev1.ProtocolUDP {
		network = "udp4"
	}
	var c net.Conn
	err := netns.Do(nsPath, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, to.String())
		return err
	})
	if err != nil {
		return netip.Addr{}, netip.AddrPort{}, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if proto == corev1.ProtocolUDP {
		if _, err := c.Write([]byte("ping")); err != nil {
			return netip.Addr{}, netip.AddrPort{}, err
		}
	}
	buf := make([]byte, 512)
	k, err := c.Read(buf)
	if err != nil {
		return netip.Addr{}, netip.AddrPort{}, err
	}
	who, seen, ok := strings.Cut(string(buf[:k]), "|")
	if !ok {
		return netip.Addr{}, netip.AddrPort{}, fmt.Errorf("bad answer %q", buf[:k])
	}
	w, err1 := netip.ParseAddr(who)
	s, err2 := netip.ParseAddrPort(seen)
	return w, s, errors.Join(err1, err2)
}

// askOK asks once with a 5 s budget and fails the test on error.
func askOK(t *testing.T, nsPath string, to netip.AddrPort, proto corev1.Protocol) (netip.Addr, netip.AddrPort) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	who, seen, err := ask(ctx, nsPath, to, proto)
	require.NoError(t, err, "%s %s from %s", proto, to, nsPath)
	return who, seen
}

// hits asks n times and counts who served.
func hits(t *testing.T, nsPath string, to netip.AddrPort, proto corev1.Protocol, n int) map[netip.Addr]int {
	t.Helper()
	got := map[netip.Addr]int{}
	for range n {
		who, _ := askOK(t, nsPath, to, proto)
		got[who]++
	}
	return got
}
