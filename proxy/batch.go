package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// A batch is the ordered list of operations of one netlink transaction,
// built without touching the kernel so that planning is unit-testable;
// nft.go executes it.

type opKind uint8

const (
	opAddTable opKind = iota
	opAddChain
	opFlushChain
	opDelChain
	opAddRule
	opAddSet
	opFlushSet
	opDelSet
	opAddElems
	opDelElems
	opDelTable
)

// hook makes a chain a base chain.
type hook struct {
	typ  nftables.ChainType
	num  nftables.ChainHook
	prio nftables.ChainPriority
}

// setKind is the type of one of the proxy's named sets.
type setKind uint8

const (
	// kindServiceMap: ipv4_addr . inet_proto . inet_service : verdict
	kindServiceMap setKind = iota
	// kindAddrSet: ipv4_addr
	kindAddrSet
	// kindAffinity: ipv4_addr : ipv4_addr . inet_service, dynamic, with
	// timeout
	kindAffinity
	// kindEndpointMap: integer : ipv4_addr . inet_service
	kindEndpointMap
	// kindEndpointSet: integer . ipv4_addr . inet_service
	kindEndpointSet
)

// element is a set element, or a map element with a verdict or data.
type element struct {
	key     []byte
	keyText string
	verdict *expr.Verdict
	val     []byte
	valText string
}

// String renders the element with its verdict or data, if any.
func (e element) String() string {
	switch {
	case e.verdict != nil:
		return e.keyText + " : " + verdictString(e.verdict.Kind, e.verdict.Chain)
	case e.val != nil:
		return e.keyText + " : " + e.valText
	}
	return e.keyText
}

type op struct {
	kind    opKind
	name    string // chain or set
	hook    *hook  // opAddChain of a base chain
	set     setKind
	timeout time.Duration // opAddSet of kindAffinity
	rule    rule
	elems   []element
}

type batch struct{ ops []op }

func (b *batch) add(o op) { b.ops = append(b.ops, o) }

func (b *batch) addTable()                     { b.add(op{kind: opAddTable}) }
func (b *batch) addChain(name string, h *hook) { b.add(op{kind: opAddChain, name: name, hook: h}) }
func (b *batch) flushChain(name string)        { b.add(op{kind: opFlushChain, name: name}) }
func (b *batch) delChain(name string)          { b.add(op{kind: opDelChain, name: name}) }
func (b *batch) addRule(chain string, r rule)  { b.add(op{kind: opAddRule, name: chain, rule: r}) }
func (b *batch) addSet(name string, k setKind, timeout time.Duration) {
	b.add(op{kind: opAddSet, name: name, set: k, timeout: timeout})
}
func (b *batch) flushSet(name string) { b.add(op{kind: opFlushSet, name: name}) }
func (b *batch) delSet(name string)   { b.add(op{kind: opDelSet, name: name}) }

// maxElemsPerOp bounds the elements of one message: the element list is
// one netlink attribute, whose length field has 16 bits.
const maxElemsPerOp = 512

func (b *batch) addElems(set string, els ...element) { b.elems(opAddElems, set, els) }
func (b *batch) delElems(set string, els ...element) { b.elems(opDelElems, set, els) }

func (b *batch) elems(kind opKind, set string, els []element) {
	// Merge into the previous operation when it is the same, so a sync of
	// many services sends few element messages.
	if n := len(b.ops); n > 0 && b.ops[n-1].kind == kind && b.ops[n-1].name == set && len(b.ops[n-1].elems) < maxElemsPerOp {
		last := &b.ops[n-1]
		k := min(len(els), maxElemsPerOp-len(last.elems))
		last.elems = append(last.elems, els[:k]...)
		els = els[k:]
	}
	for len(els) > 0 {
		k := min(len(els), maxElemsPerOp)
		b.add(op{kind: kind, name: set, elems: slices.Clone(els[:k])})
		els = els[k:]
	}
}

func (b *batch) append(o *batch) { b.ops = append(b.ops, o.ops...) }

// size estimates the number of netlink messages and elements, for sizing
// socket buffers.
func (b *batch) size() (msgs, elems int) {
	for _, o := range b.ops {
		msgs++
		elems += len(o.elems)
		if o.kind == opAddRule {
			msgs++ // the kernel echoes rules
		}
	}
	return msgs, elems
}

// String renders the batch one operation per line, in nft(8)-like syntax.
func (b *batch) String() string {
	var sb strings.Builder
	for _, o := range b.ops {
		sb.WriteString(o.String())
		sb.WriteByte('\n')
	}
	return sb.String()
}

func (o op) String() string {
	switch o.kind {
	case opAddTable:
		return "add table"
	case opDelTable:
		return "delete table"
	case opAddChain:
		if o.hook != nil {
			return fmt.Sprintf("add chain %s { type %s hook %s priority %d }", o.name, o.hook.typ, hookName(o.hook.num), o.hook.prio)
		}
		return "add chain " + o.name
	case opFlushChain:
		return "flush chain " + o.name
	case opDelChain:
		return "delete chain " + o.name
	case opAddRule:
		return "add rule " + o.name + " " + o.rule.String()
	case opAddSet:
		switch o.set {
		case kindServiceMap:
			return "add map " + o.name + " { type ipv4_addr . inet_proto . inet_service : verdict }"
		case kindAddrSet:
			return "add set " + o.name + " { type ipv4_addr }"
		case kindEndpointMap:
			return "add map " + o.name + " { type integer : ipv4_addr . inet_service }"
		case kindEndpointSet:
			return "add set " + o.name + " { type integer . ipv4_addr . inet_service }"
		default:
			return fmt.Sprintf("add map %s { type ipv4_addr : ipv4_addr . inet_service; flags dynamic,timeout; timeout %s }", o.name, o.timeout)
		}
	case opFlushSet:
		return "flush set " + o.name
	case opDelSet:
		return "delete set " + o.name
	case opAddElems, opDelElems:
		verb := "add"
		if o.kind == opDelElems {
			verb = "delete"
		}
		parts := make([]string, len(o.elems))
		for i, e := range o.elems {
			parts[i] = e.String()
			if o.kind == opDelElems {
				parts[i] = e.keyText
			}
		}
		return fmt.Sprintf("%s element %s { %s }", verb, o.name, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("op(%d)", o.kind)
}

func hookName(h nftables.ChainHook) string {
	switch h {
	case *nftables.ChainHookPrerouting:
		return "prerouting"
	case *nftables.ChainHookInput:
		return "input"
	case *nftables.ChainHookForward:
		return "forward"
	case *nftables.ChainHookOutput:
		return "output"
	case *nftables.ChainHookPostrouting:
		return "postrouting"
	}
	return fmt.Sprintf("hook(%d)", h)
}

func addrElem(ip netip.Addr) element {
	return element{key: ip.AsSlice(), keyText: ip.String()}
}

func sortElems(els []element) {
	slices.SortFunc(els, func(a, b element) int { return strings.Compare(a.keyText, b.keyText) })
}
