package proxy

import (
	"net/netip"

	"github.com/google/nftables/expr"
)

// Endpoints on the node's loopback (the `kubernetes` Service of an API
// server bound to 127.0.0.1) are reachable from pods only when the
// composition sets net.ipv4.conf.<bridge>.route_localnet=1: the kernel
// otherwise drops packets DNATed to 127.0.0.0/8 as martians. That setting
// also lets a pod hand-craft packets to 127.0.0.1 and reach every host
// service listening there (CVE-2020-8558), so the input chain always drops
// packets for 127.0.0.0/8 that arrive on an interface other than lo
// without having been translated by a Service rule — kube-proxy installs
// the same guard whenever it turns route_localnet on.

var loopbackNet = netip.MustParsePrefix("127.0.0.0/8")

// localnetGuard is the rule: ip daddr 127.0.0.0/8 iifname != "lo" ct
// status & dnat == 0 drop.
func localnetGuard() rule {
	return rule{cidr{prefix: loopbackNet}, iifNotLo{}, ctNotDNAT{}, verdict{kind: expr.VerdictDrop}}
}

// iifNotLo matches packets that did not arrive on the loopback interface.
type iifNotLo struct{}

func (iifNotLo) exprs() []expr.Any {
	name := make([]byte, 16) // IFNAMSIZ, NUL padded
	copy(name, "lo")
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: r0},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: r0, Data: name},
	}
}

func (iifNotLo) String() string { return `iifname != "lo"` }

// ctNotDNAT matches connections whose destination was not translated.
type ctNotDNAT struct{}

func (ctNotDNAT) exprs() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: r0, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: r0, DestRegister: r0, Len: 4, Mask: u32(ctStatusDstNAT), Xor: u32(0)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: r0, Data: u32(0)},
	}
}

func (ctNotDNAT) String() string { return "ct status & dnat == 0" }
