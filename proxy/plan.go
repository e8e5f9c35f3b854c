package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Names of the fixed objects of the table (the skeleton). Per-service
// objects are named after the port: "svc_" chains, "eps_" endpoint maps
// and "aff_" affinity maps (see portName).
const (
	chainServices       = "services"
	chainEndpointsCheck = "endpoints-check"
	chainReject         = "reject-chain"
	chainMasquerading   = "masquerading"
	setServiceIPs       = "service-ips"
	setNoEndpoints      = "no-endpoint-services"
	setClusterIPs       = "cluster-ips"
	// setAffinityEndpoints holds "service port id . addr . port" for
	// ports with ClientIP affinity: a remembered endpoint is used only
	// while it is still one.
	setAffinityEndpoints = "affinity-endpoints"
)

// Priority of the filter chains: before DNAT, like kube-proxy's, so they
// see the ClusterIP a packet was sent to.
const filterPriority = -110

type baseChain struct {
	name  string
	hook  hook
	rules func(pl *planner) []rule
}

func (pl *planner) baseChains() []baseChain {
	checkEndpoints := func(*planner) []rule { return []rule{{ctNew{}, jump(chainEndpointsCheck)}} }
	return []baseChain{
		{"filter-input", hook{nftables.ChainTypeFilter, *nftables.ChainHookInput, filterPriority}, func(pl *planner) []rule {
			return append(checkEndpoints(pl), localnetGuard())
		}},
		{"filter-forward", hook{nftables.ChainTypeFilter, *nftables.ChainHookForward, filterPriority}, func(pl *planner) []rule {
			return []rule{
				{ctNew{}, jump(chainEndpointsCheck)},
				// Hairpin at layer 3: a service connection routed back out
				// of the interface it came in on (a pod reaching itself, or
				// a pod on the same bridge) must be masqueraded, or the
				// reply would be switched straight back to the client by
				// the bridge, skipping the un-DNAT here. This is what makes
				// the proxy independent of br_netfilter.
				{ctNew{}, ctDNAT{}, ctOrigDaddrIn(setClusterIPs), fibSameIface{}, markSet{bit: pl.mark}},
			}
		}},
		{"filter-output", hook{nftables.ChainTypeFilter, *nftables.ChainHookOutput, filterPriority}, checkEndpoints},
		{"nat-prerouting", hook{nftables.ChainTypeNAT, *nftables.ChainHookPrerouting, *nftables.ChainPriorityNATDest}, func(*planner) []rule {
			return []rule{{jump(chainServices)}}
		}},
		{"nat-output", hook{nftables.ChainTypeNAT, *nftables.ChainHookOutput, *nftables.ChainPriorityNATDest}, func(*planner) []rule {
			return []rule{{jump(chainServices)}}
		}},
		{"nat-postrouting", hook{nftables.ChainTypeNAT, *nftables.ChainHookPostrouting, *nftables.ChainPriorityNATSource}, func(*planner) []rule {
			return []rule{{jump(chainMasquerading)}}
		}},
	}
}

// planner computes batches. It is pure: it reads only its arguments.
type planner struct {
	clusterCIDR netip.Prefix
	mark        uint32
}

// skeleton (re)writes the fixed part of the table: base chains, dispatch
// and helper chains, and the shared sets, all flushed.
func (pl *planner) skeleton(b *batch) {
	b.addTable()
	for _, s := range []struct {
		name string
		kind setKind
	}{
		{setServiceIPs, kindServiceMap}, {setNoEndpoints, kindServiceMap}, {setClusterIPs, kindAddrSet},
		{setAffinityEndpoints, kindEndpointSet},
	} {
		b.addSet(s.name, s.kind, 0)
		b.flushSet(s.name)
	}
	fixed := map[string][]rule{
		chainServices:       {{serviceVmap(setServiceIPs)}},
		chainEndpointsCheck: {{serviceVmap(setNoEndpoints)}},
		chainReject:         {{l4proto(unix.IPPROTO_TCP), reject{tcp: true}}, {reject{}}},
		chainMasquerading: {
			{markClear(pl.mark), verdict{kind: expr.VerdictReturn}},
			{markSet{bit: pl.mark, flip: true}},
			{masquerade{}},
		},
	}
	if pl.clusterCIDR.IsValid() {
		// Service traffic from outside the pod network (the host, or a
		// machine routing the service range here) is masqueraded so the
		// endpoint's reply comes back through this node. One rule here
		// instead of one per service chain: the connection's original
		// destination tells service traffic apart.
		fixed[chainMasquerading] = append([]rule{{
			ctDNAT{}, ctOrigDaddrIn(setClusterIPs), cidr{src: true, prefix: pl.clusterCIDR, neg: true}, markSet{bit: pl.mark},
		}}, fixed[chainMasquerading]...)
	}
	for _, name := range []string{chainServices, chainEndpointsCheck, chainReject, chainMasquerading} {
		b.addChain(name, nil)
		b.flushChain(name)
		for _, r := range fixed[name] {
			b.addRule(name, r)
		}
	}
	for _, bc := range pl.baseChains() {
		h := bc.hook
		b.addChain(bc.name, &h)
		b.flushChain(bc.name)
		for _, r := range bc.rules(pl) {
			b.addRule(bc.name, r)
		}
	}
}

// portObjects is what one Service port puts in the table.
type portObjects struct {
	// rules of the port's chain; nil when it has no endpoints (and no
	// chain).
	rules []rule
	// endpoints names the port's endpoints map, if it has one (more than
	// one endpoint, or affinity).
	endpoints string
	// affinity names the port's ClientIP affinity map, if any.
	affinity string
	timeout  time.Duration
	// elems are the port's elements by set: its dispatch element (in
	// service-ips or no-endpoint-services) and its endpoints.
	elems map[string][]element
}

// objects computes what p, whose id is id, puts in the table (nil for nil).
//
// Each port with several endpoints has its own small endpoints map
// (index → "addr . port") that numgen picks from. One global map would
// cost more than it saves: binding a rule to a map makes the kernel walk
// all of the map's elements, for each rule.
func (pl *planner) objects(p *servicePort, id uint32) *portObjects {
	if p == nil {
		return nil
	}
	o := &portObjects{elems: map[string][]element{}}
	key := serviceKey(p.clusterIP, p.proto, p.port)
	keyText := serviceKeyString(p.clusterIP, p.proto, p.port)
	switch {
	case len(p.endpoints) == 0 && p.drop:
		o.elems[setNoEndpoints] = []element{{key: key, keyText: keyText, verdict: &expr.Verdict{Kind: expr.VerdictDrop}}}
		return o
	case len(p.endpoints) == 0:
		o.elems[setNoEndpoints] = []element{{key: key, keyText: keyText, verdict: &expr.Verdict{Kind: expr.VerdictGoto, Chain: chainReject}}}
		return o
	}
	o.elems[setServiceIPs] = []element{{key: key, keyText: keyText, verdict: &expr.Verdict{Kind: expr.VerdictGoto, Chain: p.name.chainName()}}}
	n := uint32(len(p.endpoints))
	switch {
	case p.affinity > 0:
		o.affinity, o.timeout = p.name.affinityName(p.affinity), p.affinity
		o.endpoints = p.name.endpointsName()
		o.rules = []rule{
			{dnatSticky{id: id, affinity: o.affinity, timeout: p.affinity}},
			{dnatRandom{endpoints: o.endpoints, n: n, affinity: o.affinity, timeout: p.affinity}},
		}
		for _, ep := range p.endpoints {
			o.elems[setAffinityEndpoints] = append(o.elems[setAffinityEndpoints],
				element{key: affinityKey(id, ep), keyText: fmt.Sprintf("%d . %s . %d", id, ep.Addr(), ep.Port())})
		}
	case n == 1:
		o.rules = []rule{{dnat(p.endpoints[0])}}
		return o
	default:
		o.endpoints = p.name.endpointsName()
		o.rules = []rule{{dnatRandom{endpoints: o.endpoints, n: n}}}
	}
	for i, ep := range p.endpoints {
		o.elems[o.endpoints] = append(o.elems[o.endpoints], element{
			key: u32(uint32(i)), keyText: fmt.Sprint(i),
			val: addrPortBytes(ep), valText: fmt.Sprintf("%s . %d", ep.Addr(), ep.Port()),
		})
	}
	return o
}

func sameRules(a, b []rule) bool {
	return slices.EqualFunc(a, b, func(x, y rule) bool { return x.String() == y.String() })
}

// phases collects a sync's operations in the order the kernel needs them:
// chains and sets exist before map elements point at them, and old
// elements are gone before new ones take their keys.
type phases struct {
	sets, chains, delElems, addElems, flushStale batch
	// staleChains and staleSets are emptied in this batch and deleted in
	// a follow-up one.
	staleChains, staleSets []string
}

func (ph *phases) batch() *batch {
	var b batch
	for _, p := range []*batch{&ph.sets, &ph.chains, &ph.delElems, &ph.addElems, &ph.flushStale} {
		b.append(p)
	}
	return &b
}

// port plans the change of one Service port (named chain) from old to cur
// (either may be nil). In a full sync (full set) everything of cur is
// written, the sets having been flushed by the skeleton, and a chain is
// flushed when the kernel has it (exists) and added otherwise; in an
// incremental one only what differs is: a change of endpoints alone
// touches only endpoint elements, unless their number changes.
func (pl *planner) port(ph *phases, chain string, old, cur *portObjects, full bool, exists *objects) {
	hasOld, hasCur := old != nil && old.rules != nil, cur != nil && cur.rules != nil
	// Sets first: rules refer to them.
	if cur != nil && cur.endpoints != "" {
		switch {
		case full && exists.sets[cur.endpoints]:
			ph.sets.flushSet(cur.endpoints)
		case full, old == nil || old.endpoints != cur.endpoints:
			ph.sets.addSet(cur.endpoints, kindEndpointMap, 0)
		}
	}
	if cur != nil && cur.affinity != "" && (full || old == nil || old.affinity != cur.affinity) {
		ph.sets.addSet(cur.affinity, kindAffinity, cur.timeout)
	}
	if hasCur {
		write := true
		switch {
		case full && exists.chains[chain], !full && hasOld && !sameRules(old.rules, cur.rules):
			ph.chains.flushChain(chain)
		case full, !hasOld:
			ph.chains.addChain(chain, nil)
		default:
			write = false // same rules: only elements change
		}
		if write {
			for _, r := range cur.rules {
				ph.chains.addRule(chain, r)
			}
		}
	}
	if hasOld && !hasCur {
		ph.flushStale.flushChain(chain)
		ph.staleChains = append(ph.staleChains, chain)
	}
	for _, set := range []func(*portObjects) string{
		func(o *portObjects) string { return o.endpoints },
		func(o *portObjects) string { return o.affinity },
	} {
		if old != nil && set(old) != "" && (cur == nil || set(cur) != set(old)) {
			ph.staleSets = append(ph.staleSets, set(old))
		}
	}
	// Elements. The shared sets are diffed; a port's own endpoints map is
	// diffed while it stays, filled when new or flushed, and left alone
	// when it goes (it is deleted whole).
	diff := func(set string, was, now []element) {
		del, add := diffElems(was, now)
		ph.delElems.delElems(set, del...)
		ph.addElems.addElems(set, add...)
	}
	for _, set := range []string{setServiceIPs, setNoEndpoints, setAffinityEndpoints} {
		var was, now []element
		if old != nil && !full {
			was = old.elems[set]
		}
		if cur != nil {
			now = cur.elems[set]
		}
		diff(set, was, now)
	}
	if cur != nil && cur.endpoints != "" {
		var was []element
		if !full && old != nil && old.endpoints == cur.endpoints {
			was = old.elems[cur.endpoints]
		}
		diff(cur.endpoints, was, cur.elems[cur.endpoints])
	}
}

// diffElems returns the elements to delete and to add to go from was to
// now; an element whose key stays but whose data changes is both.
func diffElems(was, now []element) (del, add []element) {
	before := make(map[string]string, len(was))
	for _, e := range was {
		before[e.keyText] = e.String()
	}
	after := make(map[string]string, len(now))
	for _, e := range now {
		after[e.keyText] = e.String()
	}
	for _, e := range was {
		if after[e.keyText] != e.String() {
			del = append(del, e)
		}
	}
	for _, e := range now {
		if before[e.keyText] != e.String() {
			add = append(add, e)
		}
	}
	return del, add
}

// clusterIPs plans the cluster-ips set from reference counts before and
// after.
func (pl *planner) clusterIPs(ph *phases, before, after map[netip.Addr]int, full bool) {
	var add, del []element
	for ip, n := range after {
		if n > 0 && (full || before[ip] == 0) {
			add = append(add, addrElem(ip))
		}
	}
	if !full {
		for ip, n := range before {
			if n > 0 && after[ip] == 0 {
				del = append(del, addrElem(ip))
			}
		}
	}
	sortElems(add)
	sortElems(del)
	ph.delElems.delElems(setClusterIPs, del...)
	ph.addElems.addElems(setClusterIPs, add...)
}
