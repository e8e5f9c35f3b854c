package proxy

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The rules are written in a small intermediate language: a rule is a list
// of statements, each of which knows its nftables expressions and its
// nft(8)-like text. The text is what unit tests compare and what debug
// logs show; the expressions are what the kernel gets.

// Registers, in the kernel's 32-bit numbering (NFT_REG32_00 is the first
// four bytes of the legacy 16-byte NFT_REG_1).
const (
	r0 = unix.NFT_REG32_00 + iota
	r1
	r2
	r3
	r4
)

// Kernel constants not (all) in x/sys/unix.
const (
	ctStateBitNew   = 1 << 3 // NF_CT_STATE_BIT(IP_CT_NEW)
	ctStatusDstNAT  = 1 << 5 // IPS_DST_NAT
	dynsetOpDelete  = 2      // NFT_DYNSET_OP_DELETE
	icmpPortUnreach = 3      // ICMP_PORT_UNREACH
	ipv4SrcOffset   = 12
	ipv4DstOffset   = 16
)

// stmt is one statement of a rule.
type stmt interface {
	exprs() []expr.Any
	String() string
}

// rule is a list of statements.
type rule []stmt

func (r rule) String() string {
	parts := make([]string, len(r))
	for i, s := range r {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// exprs returns the rule's expressions.
func (r rule) exprs() []expr.Any {
	var out []expr.Any
	for _, s := range r {
		out = append(out, s.exprs()...)
	}
	return out
}

var concatAddrPort = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)

// addrPortBytes is the register layout of an "ipv4_addr . inet_service"
// concatenation: the address, the port in network order, two bytes of
// padding.
func addrPortBytes(ap netip.AddrPort) []byte {
	b := make([]byte, 8)
	a := ap.Addr().As4()
	copy(b, a[:])
	binary.BigEndian.PutUint16(b[4:], ap.Port())
	return b
}

func u32(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }

// cidr matches the source or destination address against a prefix.
type cidr struct {
	src    bool
	prefix netip.Prefix
	neg    bool
}

func (s cidr) exprs() []expr.Any {
	off := uint32(ipv4DstOffset)
	if s.src {
		off = ipv4SrcOffset
	}
	op := expr.CmpOpEq
	if s.neg {
		op = expr.CmpOpNeq
	}
	out := []expr.Any{&expr.Payload{DestRegister: r0, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4}}
	if s.prefix.Bits() < 32 {
		mask := make([]byte, 4)
		binary.BigEndian.PutUint32(mask, ^uint32(0)<<(32-s.prefix.Bits()))
		out = append(out, &expr.Bitwise{SourceRegister: r0, DestRegister: r0, Len: 4, Mask: mask, Xor: make([]byte, 4)})
	}
	return append(out, &expr.Cmp{Op: op, Register: r0, Data: s.prefix.Masked().Addr().AsSlice()})
}

func (s cidr) String() string {
	dir, op, val := "daddr", "", s.prefix.String()
	if s.src {
		dir = "saddr"
	}
	if s.neg {
		op = "!= "
	}
	if s.prefix.Bits() == 32 {
		val = s.prefix.Addr().String()
	}
	return "ip " + dir + " " + op + val
}

// l4proto matches the transport protocol.
type l4proto uint8

func (s l4proto) exprs() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: r0},
		&expr.Cmp{Op: expr.CmpOpEq, Register: r0, Data: []byte{byte(s)}},
	}
}

func (s l4proto) String() string { return "meta l4proto " + protoName(uint8(s)) }

// ctNew matches the first packet of a connection.
type ctNew struct{}

func (ctNew) exprs() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: r0, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: r0, DestRegister: r0, Len: 4, Mask: u32(ctStateBitNew), Xor: u32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: r0, Data: u32(0)},
	}
}

func (ctNew) String() string { return "ct state new" }

// ctDNAT matches connections whose destination was translated.
type ctDNAT struct{}

func (ctDNAT) exprs() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: r0, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: r0, DestRegister: r0, Len: 4, Mask: u32(ctStatusDstNAT), Xor: u32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: r0, Data: u32(0)},
	}
}

func (ctDNAT) String() string { return "ct status dnat" }

// ctOrigDaddrIn matches connections first addressed to a member of set.
type ctOrigDaddrIn string

func (s ctOrigDaddrIn) exprs() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: r0, Key: expr.CtKeyDST, Direction: 0},
		&expr.Lookup{SourceRegister: r0, SetName: string(s)},
	}
}

func (s ctOrigDaddrIn) String() string { return "ct original ip daddr @" + string(s) }

// fibSameIface matches packets routed back out of the interface they came
// in on (the destination is reachable through the input interface).
type fibSameIface struct{}

func (fibSameIface) exprs() []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: r0, FlagDADDR: true, FlagIIF: true, ResultOIF: true},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: r0, Data: u32(0)},
	}
}

func (fibSameIface) String() string { return "fib daddr . iif oif exists" }

// markClear matches packets without the mark bit.
type markClear uint32

func (s markClear) exprs() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: r0},
		&expr.Bitwise{SourceRegister: r0, DestRegister: r0, Len: 4, Mask: u32(uint32(s)), Xor: u32(0)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: r0, Data: u32(0)},
	}
}

func (s markClear) String() string { return fmt.Sprintf("meta mark & %#x == 0", uint32(s)) }

// markSet sets (or, with flip, toggles) the mark bit.
type markSet struct {
	bit  uint32
	flip bool
}

func (s markSet) exprs() []expr.Any {
	mask := ^s.bit // (mark & ^bit) ^ bit == mark | bit
	if s.flip {
		mask = ^uint32(0)
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: r0},
		&expr.Bitwise{SourceRegister: r0, DestRegister: r0, Len: 4, Mask: u32(mask), Xor: u32(s.bit)},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: r0, SourceRegister: true},
	}
}

func (s markSet) String() string {
	op := "|"
	if s.flip {
		op = "^"
	}
	return fmt.Sprintf("meta mark set meta mark %s %#x", op, s.bit)
}

// masquerade source-NATs to the output interface's address.
type masquerade struct{}

func (masquerade) exprs() []expr.Any { return []expr.Any{&expr.Masq{FullyRandom: true}} }
func (masquerade) String() string    { return "masquerade fully-random" }

// reject answers with a TCP reset (tcp) or an ICMP port unreachable.
type reject struct{ tcp bool }

func (s reject) exprs() []expr.Any {
	if s.tcp {
		return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}}
	}
	return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: icmpPortUnreach}}
}

func (s reject) String() string {
	if s.tcp {
		return "reject with tcp reset"
	}
	return "reject with icmp port-unreachable"
}

// verdict ends a rule: jump, goto, return, drop.
type verdict struct {
	kind  expr.VerdictKind
	chain string
}

func jump(c string) verdict { return verdict{kind: expr.VerdictJump, chain: c} }
func goTo(c string) verdict { return verdict{kind: expr.VerdictGoto, chain: c} }
func (s verdict) exprs() []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: s.kind, Chain: s.chain}}
}

func (s verdict) String() string { return verdictString(s.kind, s.chain) }

func verdictString(k expr.VerdictKind, chain string) string {
	switch k {
	case expr.VerdictJump:
		return "jump " + chain
	case expr.VerdictGoto:
		return "goto " + chain
	case expr.VerdictReturn:
		return "return"
	case expr.VerdictDrop:
		return "drop"
	case expr.VerdictAccept:
		return "accept"
	}
	return fmt.Sprintf("verdict(%d)", k)
}

// serviceVmap dispatches on destination address, protocol and port
// through a verdict map keyed by "ipv4_addr . inet_proto . inet_service".
type serviceVmap string

func (s serviceVmap) exprs() []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: r0, Base: expr.PayloadBaseNetworkHeader, Offset: ipv4DstOffset, Len: 4},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: r1},
		&expr.Payload{DestRegister: r2, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: r0, DestRegister: unix.NFT_REG_VERDICT, IsDestRegSet: true, SetName: string(s)},
	}
}

func (s serviceVmap) String() string { return "ip daddr . meta l4proto . th dport vmap @" + string(s) }

// serviceKey is an element key of the service maps.
func serviceKey(ip netip.Addr, proto uint8, port uint16) []byte {
	b := make([]byte, 12)
	a := ip.As4()
	copy(b, a[:])
	b[4] = proto
	binary.BigEndian.PutUint16(b[8:], port)
	return b
}

func serviceKeyString(ip netip.Addr, proto uint8, port uint16) string {
	return fmt.Sprintf("%s . %s . %d", ip, protoName(proto), port)
}

// dnat translates the destination to one endpoint.
type dnat netip.AddrPort

func (s dnat) exprs() []expr.Any {
	ap := netip.AddrPort(s)
	port := make([]byte, 2)
	binary.BigEndian.PutUint16(port, ap.Port())
	return []expr.Any{
		&expr.Immediate{Register: r0, Data: ap.Addr().AsSlice()},
		&expr.Immediate{Register: r1, Data: port},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: r0, RegProtoMin: r1},
	}
}

func (s dnat) String() string { return "dnat to " + netip.AddrPort(s).String() }

// affinityKey is an element key of the affinity-endpoints set: the service
// port's id and an endpoint.
func affinityKey(id uint32, ep netip.AddrPort) []byte { return append(u32(id), addrPortBytes(ep)...) }

// dnatRandom picks one of the n endpoints of a service port at random
// (numgen random mod n, looked up in the port's endpoints map) and
// translates to it. With affinity set it first records the choice for the
// client address in that map.
type dnatRandom struct {
	endpoints string
	n         uint32
	affinity  string
	timeout   time.Duration
}

func (s dnatRandom) exprs() []expr.Any {
	out := []expr.Any{
		&expr.Numgen{Register: r0, Modulus: s.n, Type: unix.NFT_NG_RANDOM},
		&expr.Lookup{SourceRegister: r0, DestRegister: r1, IsDestRegSet: true, SetName: s.endpoints},
	}
	if s.affinity != "" {
		out = append(out,
			&expr.Payload{DestRegister: r4, Base: expr.PayloadBaseNetworkHeader, Offset: ipv4SrcOffset, Len: 4},
			// A stale entry (its endpoint is gone) is replaced; dynset
			// on a map needs a data register even to delete.
			&expr.Dynset{SrcRegKey: r4, SrcRegData: r1, SetName: s.affinity, Operation: dynsetOpDelete},
			&expr.Dynset{SrcRegKey: r4, SrcRegData: r1, SetName: s.affinity, Operation: unix.NFT_DYNSET_OP_ADD, Timeout: s.timeout},
		)
	}
	return append(out, &expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: r1, RegProtoMin: r2})
}

func (s dnatRandom) String() string {
	txt := fmt.Sprintf("dnat to numgen random mod %d map @%s", s.n, s.endpoints)
	if s.affinity != "" {
		txt += fmt.Sprintf(" remember ip saddr in @%s timeout %s", s.affinity, s.timeout)
	}
	return txt
}

// dnatSticky translates to the endpoint the affinity map remembers for the
// client address, provided it is still an endpoint of service port id
// (the affinity-endpoints set), and refreshes the entry's timeout.
// Without a usable entry the rule does not match.
type dnatSticky struct {
	id       uint32
	affinity string
	timeout  time.Duration
}

func (s dnatSticky) exprs() []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: r4, Base: expr.PayloadBaseNetworkHeader, Offset: ipv4SrcOffset, Len: 4},
		&expr.Lookup{SourceRegister: r4, DestRegister: r1, IsDestRegSet: true, SetName: s.affinity},
		&expr.Immediate{Register: r0, Data: u32(s.id)},
		&expr.Lookup{SourceRegister: r0, SetName: setAffinityEndpoints},
		&expr.Dynset{SrcRegKey: r4, SrcRegData: r1, SetName: s.affinity, Operation: unix.NFT_DYNSET_OP_UPDATE, Timeout: s.timeout},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: r1, RegProtoMin: r2},
	}
}

func (s dnatSticky) String() string {
	return fmt.Sprintf("dnat to ip saddr map @%s if %d . that in @%s refresh timeout %s", s.affinity, s.id, setAffinityEndpoints, s.timeout)
}
