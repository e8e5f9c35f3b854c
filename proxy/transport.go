package proxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

// The proxy sends its transactions itself instead of through
// nftables.Conn.Flush, which asks the kernel to acknowledge every message
// and to echo every rule back, then reads the replies one allocation and
// two system calls at a time: for a full sync that is thousands of replies
// and most of the sync's time. google/nftables still marshals every
// message (captured through its test dialer); the transport clears the
// acknowledgement and echo flags on all but the last message, so a
// transaction costs one sendmsg and one reply, plus one error reply per
// failed message (the kernel reports those regardless), which it
// attributes to the operation that failed.

// transport is a raw NETLINK_NETFILTER socket.
type transport struct {
	fd  int
	seq uint32
	buf []byte
}

// openTransport opens the socket in the namespace at nsPath ("" for the
// caller's) with send and receive buffers of size bytes.
func openTransport(nsPath string, size int) (*transport, error) {
	fd := -1
	open := func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		return err
	}
	var err error
	if nsPath == "" {
		err = open()
	} else {
		err = netns.Do(nsPath, open)
	}
	if err != nil {
		return nil, fmt.Errorf("netfilter netlink socket in %q: %w", nsPath, err)
	}
	tv := unix.NsecToTimeval(int64(30 * time.Second))
	err = errors.Join(
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, size),
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		// Errors carry only the failed message's header, plus the
		// kernel's explanation when it has one.
		unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1),
		unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1),
		unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}),
	)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set up netfilter netlink socket: %w", err)
	}
	return &transport{fd: fd, buf: make([]byte, 64<<10)}, nil
}

func (t *transport) close() { _ = unix.Close(t.fd) }

// capture collects the messages google/nftables would send.
type capture struct{ msgs []netlink.Message }

func (c *capture) dial(req []netlink.Message) ([]netlink.Message, error) {
	if req != nil {
		c.msgs = append(c.msgs, req...)
		return nil, nil
	}
	// Flush waits for one acknowledgement per message: hand them out.
	return []netlink.Message{{Header: netlink.Header{Type: netlink.Error, Length: 20}, Data: make([]byte, 4)}}, nil
}

// marshaller returns an nftables.Conn whose Flush marshals into c.
func (c *capture) conn() (*nftables.Conn, error) {
	return nftables.New(nftables.WithTestDial(c.dial))
}

// send sends msgs (without batch delimiters) as one transaction and waits
// for its outcome. describe names the operation of message i for errors.
func (t *transport) send(msgs []netlink.Message, describe func(i int) string) error {
	if len(msgs) == 0 {
		return nil
	}
	// Sequence numbers: base for the batch begin, base+1+i for message i
	// (the last one, acknowledged, is last), last+1 for the batch end.
	base := t.seq + 1
	last := base + uint32(len(msgs))
	t.seq = last + 1
	size := 2 * 20
	for _, m := range msgs {
		size += 16 + align4(len(m.Data))
	}
	out := make([]byte, 0, size)
	batchHdr := []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, unix.NFNL_SUBSYS_NFTABLES}
	out = appendMsg(out, unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, base, batchHdr)
	for i, m := range msgs {
		flags := uint16(m.Header.Flags) &^ (unix.NLM_F_ACK | unix.NLM_F_ECHO)
		if i == len(msgs)-1 {
			flags |= unix.NLM_F_ACK
		}
		out = appendMsg(out, uint16(m.Header.Type), flags, base+1+uint32(i), m.Data)
	}
	out = appendMsg(out, unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, last+1, batchHdr)
	if err := unix.Sendto(t.fd, out, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("send nftables transaction: %w", err)
	}
	var errs []error
	for {
		n, _, err := unix.Recvfrom(t.fd, t.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("receive nftables replies: %w", err))...)
		}
		replies, err := syscall.ParseNetlinkMessage(t.buf[:n])
		if err != nil {
			return fmt.Errorf("parse nftables replies: %w", err)
		}
		for _, r := range replies {
			if r.Header.Type != unix.NLMSG_ERROR || len(r.Data) < 4 {
				continue
			}
			seq := r.Header.Seq
			if errno := -int32(binary.NativeEndian.Uint32(r.Data)); errno != 0 {
				what := "transaction"
				if seq > base && seq <= last {
					what = describe(int(seq - base - 1))
				}
				err := fmt.Errorf("%s: %w", what, syscall.Errno(errno))
				if msg := extAckMsg(r); msg != "" {
					err = fmt.Errorf("%s: %w (%s)", what, syscall.Errno(errno), msg)
				}
				errs = append(errs, err)
				if seq == base {
					return errors.Join(errs...) // the batch itself was refused
				}
			}
			if seq == last {
				return errors.Join(errs...)
			}
		}
	}
}

func align4(n int) int { return (n + 3) &^ 3 }

func appendMsg(b []byte, typ, flags uint16, seq uint32, data []byte) []byte {
	var h [16]byte
	binary.NativeEndian.PutUint32(h[0:], uint32(16+len(data)))
	binary.NativeEndian.PutUint16(h[4:], typ)
	binary.NativeEndian.PutUint16(h[6:], flags)
	binary.NativeEndian.PutUint32(h[8:], seq)
	b = append(b, h[:]...)
	b = append(b, data...)
	for range align4(len(data)) - len(data) {
		b = append(b, 0)
	}
	return b
}

// extAckMsg returns the kernel's error message of an extended ack.
func extAckMsg(r syscall.NetlinkMessage) string {
	if r.Header.Flags&unix.NLM_F_ACK_TLVS == 0 || len(r.Data) < 20 {
		return ""
	}
	attrs := r.Data[20:] // errno and the capped request header
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:])
		if l < 4 || l > len(attrs) {
			return ""
		}
		if typ == unix.NLMSGERR_ATTR_MSG {
			v := attrs[4:l]
			for len(v) > 0 && v[len(v)-1] == 0 {
				v = v[:len(v)-1]
			}
			return string(v)
		}
		attrs = attrs[align4(l):]
	}
	return ""
}
