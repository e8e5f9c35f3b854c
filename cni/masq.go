package cni

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// masqChain is the chain holding the masquerade rule in the node's table.
const masqChain = "postrouting"

// masquerade owns one nftables table in the node's network namespace that
// source-NATs traffic from the pod CIDR to anywhere outside it:
//
//	table ip <name> {
//	  chain postrouting {
//	    type nat hook postrouting priority srcnat; policy accept;
//	    ip saddr <cidr> ip daddr != <cidr> masquerade
//	  }
//	}
type masquerade struct {
	table  string
	cidr   netip.Prefix
	nsPath string // "" for the caller's namespace
}

func (m *masquerade) family() nftables.TableFamily {
	if m.cidr.Addr().Is4() {
		return nftables.TableFamilyIPv4
	}
	return nftables.TableFamilyIPv6
}

// conn opens an nftables connection in the node's namespace.
func (m *masquerade) conn() (*nftables.Conn, func(), error) {
	if m.nsPath == "" {
		c, err := nftables.New()
		return c, func() {}, err
	}
	ns, err := vnetns.GetFromPath(m.nsPath)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", m.nsPath, err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		ns.Close()
		return nil, nil, err
	}
	return c, func() { ns.Close() }, nil
}

// ensure (re)creates the table with exactly one rule, atomically: adding
// the table first makes the delete valid whether or not it existed.
func (m *masquerade) ensure() error {
	c, done, err := m.conn()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	defer done()
	t := &nftables.Table{Name: m.table, Family: m.family()}
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	ch := c.AddChain(&nftables.Chain{
		Name:     masqChain,
		Table:    t,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
	})
	srcOff, dstOff := uint32(12), uint32(16) // IPv4 header
	if !m.cidr.Addr().Is4() {
		srcOff, dstOff = 8, 24 // IPv6 header
	}
	var exprs []expr.Any
	exprs = append(exprs, matchPrefix(srcOff, m.cidr, expr.CmpOpEq)...)
	exprs = append(exprs, matchPrefix(dstOff, m.cidr, expr.CmpOpNeq)...)
	exprs = append(exprs, &expr.Counter{}, &expr.Masq{})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: install masquerade table %s: %w", m.table, err)
	}
	return nil
}

// remove deletes the table; a missing table is not an error.
func (m *masquerade) remove() error {
	c, done, err := m.conn()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	defer done()
	t, err := c.ListTableOfFamily(m.table, m.family())
	if errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nftables: look up table %s: %w", m.table, err)
	}
	c.DelTable(t)
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("nftables: delete table %s: %w", m.table, err)
	}
	return nil
}

// matchPrefix compares the address at offset of the network header, masked
// to the prefix length, against the prefix.
func matchPrefix(offset uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	n := uint32(p.Addr().BitLen() / 8)
	mask := make([]byte, n)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: n},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)},
		&expr.Cmp{Op: op, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}
