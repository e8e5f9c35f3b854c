package cnitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/cni/netns"
)

// EchoServer listens on ip (port chosen by the kernel) inside the namespace
// at nsPath ("" for the caller's own) and echoes every connection back, prefixed by the peer's
// address ("<ip>:<port>|"), until the test ends. The socket is created on a
// thread inside the namespace; serving it needs no thread switching.
func EchoServer(t testing.TB, nsPath string, ip netip.Addr) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	err := inNS(nsPath, func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		return err
	})
	require.NoError(t, err, "listen on %s in %s", ip, nsPath)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.WriteString(c, c.RemoteAddr().String()+"|"); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return netip.MustParseAddrPort(ln.Addr().String())
}

// Echo connects from inside the namespace at nsPath ("" for the caller's) to the echo server at
// to, sends msg and checks it comes back. It returns the source address the
// server saw (after any NAT).
func Echo(ctx context.Context, nsPath string, to netip.AddrPort, msg string) (netip.AddrPort, error) {
	var c net.Conn
	err := inNS(nsPath, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "tcp", to.String())
		return err
	})
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("dial %s from %s: %w", to, nsPath, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, msg); err != nil {
		return netip.AddrPort{}, fmt.Errorf("write to %s: %w", to, err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	got, err := io.ReadAll(c)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("read from %s: %w", to, err)
	}
	peer, rest, ok := bytes.Cut(got, []byte("|"))
	if !ok || string(rest) != msg {
		return netip.AddrPort{}, fmt.Errorf("echo from %s: got %q, want %q", to, got, msg)
	}
	seen, err := netip.ParseAddrPort(string(peer))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("echo from %s: bad peer %q: %w", to, peer, err)
	}
	return seen, nil
}

// RequireEcho retries Echo until it succeeds or a 10 s budget runs out (a
// fresh veth may still be settling), failing the test with the last error.
func RequireEcho(t testing.TB, nsPath string, to netip.AddrPort) netip.AddrPort {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := "hello " + RandomHex(4)
	var lastErr error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		seen, err := Echo(attempt, nsPath, to, msg)
		cancelAttempt()
		if err == nil {
			return seen
		}
		lastErr = err
		select {
		case <-ctx.Done():
			require.NoError(t, errors.Join(lastErr, ctx.Err()), "echo %s from %s", to, nsPath)
			return netip.AddrPort{}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// inNS runs fn in the namespace at nsPath, or right here for "". Never name
// the caller's namespace /proc/self/ns/net: that is the main thread's, which
// is not necessarily the caller's thread's.
func inNS(nsPath string, fn func() error) error {
	if nsPath == "" {
		return fn()
	}
	return netns.Do(nsPath, fn)
}
