package proxy

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

// objects are the chains and named sets a table holds.
type objects struct{ chains, sets map[string]bool }

// listObjects lists what the table holds (nothing when it does not exist).
func (p *Proxier) listObjects() (*objects, error) {
	c, err := p.connection(0, 0)
	if err != nil {
		return nil, err
	}
	chains, sets, _, err := c.objects()
	if err != nil {
		p.closeConn()
		return nil, err
	}
	o := &objects{chains: map[string]bool{}, sets: map[string]bool{}}
	for _, n := range chains {
		o.chains[n] = true
	}
	for _, n := range sets {
		o.sets[n] = true
	}
	return o, nil
}

// apply sends the planned transaction, then deletes the objects it
// emptied. A full sync (listed set) also empties whatever else the table
// holds: a crashed predecessor's services, an older layout.
func (p *Proxier) apply(b *batch, ph *phases, listed *objects) error {
	b.append(ph.batch())
	staleChains, staleSets := ph.staleChains, ph.staleSets
	if listed != nil {
		keep := writtenNames(b)
		for _, ch := range slices.Sorted(maps.Keys(listed.chains)) {
			if !keep[ch] {
				b.flushChain(ch)
				staleChains = append(staleChains, ch)
			}
		}
		for _, s := range slices.Sorted(maps.Keys(listed.sets)) {
			if !keep[s] {
				staleSets = append(staleSets, s)
			}
		}
	}
	if listed == nil && len(b.ops) == 0 && len(p.staleChains)+len(p.staleSets) == 0 {
		return nil
	}
	c, err := p.connection(b.size())
	if err != nil {
		return err
	}
	if len(b.ops) > 0 {
		if err := c.run(b); err != nil {
			p.closeConn() // the socket may hold unread replies
			return err
		}
	}
	for n := range writtenNames(b) {
		delete(p.staleChains, n) // in use again (unless stale below)
		delete(p.staleSets, n)
	}
	for _, n := range staleChains {
		p.staleChains[n] = struct{}{}
	}
	for _, n := range staleSets {
		p.staleSets[n] = struct{}{}
	}
	leftChains, leftSets, err := c.deleteStale(slices.Sorted(maps.Keys(p.staleChains)), slices.Sorted(maps.Keys(p.staleSets)))
	if err != nil {
		p.log.Warn("deleting emptied chains and sets; will retry", "error", err)
	}
	p.staleChains, p.staleSets = map[string]struct{}{}, map[string]struct{}{}
	for _, n := range leftChains {
		p.staleChains[n] = struct{}{}
	}
	for _, n := range leftSets {
		p.staleSets[n] = struct{}{}
	}
	return nil
}

// connection returns the proxier's netlink connection, (re)dialling it
// when its buffers are too small for a batch of msgs messages and elems
// elements. It stays open between syncs: closing an nftables socket waits
// for the kernel to finish releasing the last transaction's objects (an
// RCU grace period, milliseconds), which would otherwise dominate small
// syncs.
func (p *Proxier) connection(msgs, elems int) (*conn, error) {
	need := bufferSize(msgs, elems)
	if p.conn != nil && p.conn.size >= need {
		return p.conn, nil
	}
	p.closeConn()
	c, err := dial(p.cfg.NetNS, p.cfg.Table, max(need, minBufferSize))
	if err != nil {
		return nil, err
	}
	p.conn = c
	return c, nil
}

func (p *Proxier) closeConn() {
	if p.conn != nil {
		p.conn.close()
		p.conn = nil
	}
}

// writtenNames are the chains and sets a batch adds or flushes (and so
// will hold something), less the chains it flushes to empty them.
func writtenNames(b *batch) map[string]bool {
	m := map[string]bool{}
	for _, o := range b.ops {
		switch o.kind {
		case opAddChain, opAddSet, opFlushChain, opFlushSet:
			m[o.name] = true
		}
	}
	return m
}

// flowCleanup names UDP conntrack entries to delete after a sync: those
// of a ClusterIP:port translated to a removed endpoint, or, with a zero
// endpoint, all of them (the port just got endpoints, and earlier
// datagrams may have left entries that bypass the new DNAT).
type flowCleanup struct {
	clusterIP netip.Addr
	port      uint16
	endpoint  netip.AddrPort
}

// udpCleanups lists the conntrack cleanups a change of a UDP port needs.
// TCP needs none: a removed endpoint's connections fail on their own.
func udpCleanups(old, cur *servicePort) []flowCleanup {
	var out []flowCleanup
	if old != nil && old.proto == unix.IPPROTO_UDP {
		keep := map[netip.AddrPort]bool{}
		if cur != nil && cur.sameKey(old) {
			for _, ep := range cur.endpoints {
				keep[ep] = true
			}
		}
		for _, ep := range old.endpoints {
			if !keep[ep] {
				out = append(out, flowCleanup{clusterIP: old.clusterIP, port: old.port, endpoint: ep})
			}
		}
	}
	if hasEndpoints(cur) && cur.proto == unix.IPPROTO_UDP && (!hasEndpoints(old) || !old.sameKey(cur)) {
		out = append(out, flowCleanup{clusterIP: cur.clusterIP, port: cur.port})
	}
	return out
}

// clearFlows deletes the conntrack entries of the cleanups.
func (p *Proxier) clearFlows(fs []flowCleanup) error {
	if len(fs) == 0 {
		return nil
	}
	var h *netlink.Handle
	var err error
	if p.cfg.NetNS == "" {
		h, err = netlink.NewHandle(unix.NETLINK_NETFILTER)
	} else {
		h, err = netns.HandleAt(p.cfg.NetNS)
	}
	if err != nil {
		return err
	}
	defer h.Close()
	filters := make([]netlink.CustomConntrackFilter, 0, len(fs))
	for _, f := range fs {
		cf := &netlink.ConntrackFilter{}
		err := cf.AddProtocol(unix.IPPROTO_UDP)
		if err == nil {
			err = cf.AddIP(netlink.ConntrackOrigDstIP, f.clusterIP.AsSlice())
		}
		if err == nil {
			err = cf.AddPort(netlink.ConntrackOrigDstPort, f.port)
		}
		if err == nil && f.endpoint.IsValid() {
			err = cf.AddIP(netlink.ConntrackReplySrcIP, f.endpoint.Addr().AsSlice())
		}
		if err != nil {
			return err
		}
		filters = append(filters, cf)
	}
	n, err := h.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, filters...)
	if n > 0 {
		p.log.Debug("deleted stale UDP conntrack entries", "count", n)
	}
	return err
}
