package proxy

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/google/nftables"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// conn is one netlink connection to nftables in the target namespace.
type conn struct {
	*nftables.Conn            // lasting: dumps (listing chains and sets)
	tx             *transport // transactions
	table          *nftables.Table
	size           int // socket buffer sizes
}

// minBufferSize is the least socket buffer size of a transport (a limit,
// not an allocation).
const minBufferSize = 8 << 20

// bufferSize is the socket buffer size a batch of msgs messages and elems
// set elements needs: the whole batch goes out in one sendmsg, which the
// default send buffer would refuse (EMSGSIZE) for a large sync, and a
// failing batch may bring one error reply per message.
func bufferSize(msgs, elems int) int { return 1<<20 + msgs*2048 + elems*64 }

// dial opens a connection in the namespace at nsPath ("" for the
// caller's): a lasting google/nftables connection for dumps and a
// transport for transactions, with send and receive buffers of size bytes.
func dial(nsPath, table string, size int) (*conn, error) {
	opts := []nftables.ConnOption{nftables.AsLasting()}
	if nsPath != "" {
		ns, err := vnetns.GetFromPath(nsPath)
		if err != nil {
			return nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
		}
		// The socket is created inside the namespace at dial time; the
		// descriptor is not needed afterwards.
		defer ns.Close()
		opts = append(opts, nftables.WithNetNSFd(int(ns)))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("nftables connection in %q: %w", nsPath, err)
	}
	tx, err := openTransport(nsPath, size)
	if err != nil {
		_ = c.CloseLasting()
		return nil, err
	}
	return &conn{Conn: c, tx: tx, size: size, table: &nftables.Table{Name: table, Family: nftables.TableFamilyIPv4}}, nil
}

func (c *conn) close() {
	_ = c.CloseLasting()
	c.tx.close()
}

// isNotExist reports whether err says an object is missing.
func isNotExist(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist)
}

// objects lists the chains and named sets of the table; exists is false
// when there is no table.
func (c *conn) objects() (chains, sets []string, exists bool, err error) {
	if _, err := c.ListTableOfFamily(c.table.Name, c.table.Family); err != nil {
		if isNotExist(err) {
			return nil, nil, false, nil
		}
		return nil, nil, false, fmt.Errorf("look up table %s: %w", c.table.Name, err)
	}
	all, err := c.ListChainsOfTableFamily(c.table.Family)
	if err != nil {
		return nil, nil, true, fmt.Errorf("list chains of table %s: %w", c.table.Name, err)
	}
	for _, ch := range all {
		if ch.Table != nil && ch.Table.Name == c.table.Name {
			chains = append(chains, ch.Name)
		}
	}
	ss, err := c.GetSets(c.table)
	if err != nil {
		return nil, nil, true, fmt.Errorf("list sets of table %s: %w", c.table.Name, err)
	}
	for _, s := range ss {
		if !s.Anonymous && !strings.HasPrefix(s.Name, "__") {
			sets = append(sets, s.Name)
		}
	}
	slices.Sort(chains)
	slices.Sort(sets)
	return chains, sets, true, nil
}

// run sends the batch as one transaction.
func (c *conn) run(b *batch) error {
	var cp capture
	q, err := cp.conn()
	if err != nil {
		return err
	}
	t := c.table
	for i := range b.ops {
		o := &b.ops[i]
		var err error
		switch o.kind {
		case opAddTable:
			q.AddTable(t)
		case opAddChain:
			ch := &nftables.Chain{Name: o.name, Table: t}
			if o.hook != nil {
				ch.Type = o.hook.typ
				ch.Hooknum = nftables.ChainHookRef(o.hook.num)
				ch.Priority = nftables.ChainPriorityRef(o.hook.prio)
				accept := nftables.ChainPolicyAccept
				ch.Policy = &accept
			}
			q.AddChain(ch)
		case opFlushChain:
			q.FlushChain(&nftables.Chain{Name: o.name, Table: t})
		case opDelChain:
			q.DelChain(&nftables.Chain{Name: o.name, Table: t})
		case opAddRule:
			q.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: o.name, Table: t}, Exprs: o.rule.exprs()})
		case opAddSet:
			err = q.AddSet(namedSet(t, o), nil)
		case opFlushSet:
			q.FlushSet(&nftables.Set{Table: t, Name: o.name})
		case opDelSet:
			q.DelSet(&nftables.Set{Table: t, Name: o.name})
		case opDelTable:
			q.DelTable(t)
		case opAddElems, opDelElems:
			s := &nftables.Set{Table: t, Name: o.name, IsMap: o.elems[0].verdict != nil || o.elems[0].val != nil}
			els := make([]nftables.SetElement, len(o.elems))
			for i, e := range o.elems {
				els[i] = nftables.SetElement{Key: e.key}
				if o.kind == opAddElems {
					els[i].VerdictData, els[i].Val = e.verdict, e.val
				}
			}
			if o.kind == opAddElems {
				err = q.SetAddElements(s, els)
			} else {
				err = q.SetDeleteElements(s, els)
			}
		}
		if err != nil {
			return fmt.Errorf("marshal %q: %w", o.String(), err)
		}
	}
	if err := q.Flush(); err != nil {
		return fmt.Errorf("marshal nftables transaction: %w", err)
	}
	msgs := cp.msgs
	if len(msgs) >= 2 {
		msgs = msgs[1 : len(msgs)-1] // google/nftables' batch delimiters
	}
	describe := func(i int) string {
		if len(msgs) == len(b.ops) { // one message per operation
			return b.ops[i].String()
		}
		return fmt.Sprintf("message %d", i)
	}
	if err := c.tx.send(msgs, describe); err != nil {
		return fmt.Errorf("nftables transaction on table %s (%d operations): %w", t.Name, len(b.ops), err)
	}
	return nil
}

func namedSet(t *nftables.Table, o *op) *nftables.Set {
	s := &nftables.Set{Table: t, Name: o.name}
	switch o.set {
	case kindServiceMap:
		s.IsMap = true
		s.KeyType = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
		s.Concatenation = true
		s.DataType = nftables.TypeVerdict
	case kindAddrSet:
		s.KeyType = nftables.TypeIPAddr
	case kindEndpointMap:
		s.IsMap = true
		s.KeyType = nftables.TypeInteger
		s.DataType = concatAddrPort
	case kindEndpointSet:
		s.Concatenation = true
		s.KeyType = nftables.MustConcatSetType(nftables.TypeInteger, nftables.TypeIPAddr, nftables.TypeInetService)
	case kindAffinity:
		s.IsMap, s.HasTimeout, s.Dynamic = true, true, true
		s.KeyType = nftables.TypeIPAddr
		s.DataType = concatAddrPort
		s.Timeout = o.timeout
	}
	return s
}

// Cleanup removes the table left by a proxy that did not shut down
// cleanly, in the network namespace at netns ("" for the caller's). A
// missing table is not an error.
func Cleanup(netns, table string) error {
	if table == "" {
		table = DefaultTable
	}
	c, err := dial(netns, table, minBufferSize)
	if err != nil {
		return err
	}
	defer c.close()
	return c.deleteTable()
}

func (c *conn) deleteTable() error {
	if _, err := c.ListTableOfFamily(c.table.Name, c.table.Family); err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("look up table %s: %w", c.table.Name, err)
	}
	if err := c.run(&batch{ops: []op{{kind: opDelTable}}}); err != nil && !isNotExist(err) {
		return fmt.Errorf("delete table %s: %w", c.table.Name, err)
	}
	return nil
}

// deleteStale deletes emptied chains and unreferenced sets, in one batch,
// or one by one when the batch fails (a missing object, or on kernels
// before 6.2 a chain whose last reference went away a moment ago). It
// returns the chains and sets it could not delete yet.
func (c *conn) deleteStale(chains, sets []string) (leftChains, leftSets []string, err error) {
	if len(chains)+len(sets) == 0 {
		return nil, nil, nil
	}
	var b batch
	for _, s := range sets {
		b.delSet(s)
	}
	for _, ch := range chains {
		b.delChain(ch)
	}
	if c.run(&b) == nil {
		return nil, nil, nil
	}
	// Each failed transaction costs the kernel an RCU grace period, so
	// only so many are tried one by one; the rest wait for the next sync.
	const maxSingles = 32
	var errs []error
	for i, o := range b.ops {
		if i >= maxSingles {
			if o.kind == opDelChain {
				leftChains = append(leftChains, o.name)
			} else {
				leftSets = append(leftSets, o.name)
			}
			continue
		}
		one := batch{ops: []op{o}}
		if err := c.run(&one); err != nil && !isNotExist(err) {
			if o.kind == opDelChain {
				leftChains = append(leftChains, o.name)
			} else {
				leftSets = append(leftSets, o.name)
			}
			if !errors.Is(err, syscall.EBUSY) {
				errs = append(errs, err)
			}
		}
	}
	return leftChains, leftSets, errors.Join(errs...)
}
