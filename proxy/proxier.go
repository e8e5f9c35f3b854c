package proxy

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Proxier programs one node's service rules. Create it with New, then
// either Run it (informers keep the rules in sync) or call Sync.
type Proxier struct {
	cfg Config
	log *slog.Logger
	m   *metrics
	pl  planner

	// mu guards the view of the API (services, slices) and what changed
	// in it since the last sync.
	mu       sync.Mutex
	services map[types.NamespacedName]*corev1.Service
	slices   map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice
	dirty    map[types.NamespacedName]struct{}
	triggers map[types.NamespacedName][]time.Time
	needFull bool
	informed bool // Run's informers feed the view

	// syncMu serialises syncs and guards what is programmed.
	syncMu      sync.Mutex
	applied     map[types.NamespacedName][]*servicePort
	ipRefs      map[netip.Addr]int
	staleChains map[string]struct{}
	staleSets   map[string]struct{}
	programmed  bool
	// ids number the programmed service ports (keys of the endpoints
	// map); freed ids are reused.
	ids     map[portName]uint32
	freeIDs []uint32
	lastID  uint32
	conn    *conn // lasting, see connection

	kick    chan struct{}
	running atomic.Bool
	// synced, when set (tests), is called after every successful sync with
	// the services it wrote.
	synced func(full bool, changed []types.NamespacedName)
}

// New validates cfg and returns a Proxier. It touches neither the API nor
// the kernel.
func New(cfg Config) (*Proxier, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Proxier{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "proxy", "table", cfg.Table),
		m:           m,
		pl:          planner{clusterCIDR: cfg.ClusterCIDR, mark: cfg.MasqueradeMark},
		services:    map[types.NamespacedName]*corev1.Service{},
		slices:      map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice{},
		dirty:       map[types.NamespacedName]struct{}{},
		triggers:    map[types.NamespacedName][]time.Time{},
		applied:     map[types.NamespacedName][]*servicePort{},
		ipRefs:      map[netip.Addr]int{},
		ids:         map[portName]uint32{},
		staleChains: map[string]struct{}{},
		staleSets:   map[string]struct{}{},
		kick:        make(chan struct{}, 1),
	}, nil
}

// Sync brings the rules up to date now, in one transaction: only the
// chains of Services that changed since the last sync are rewritten, or
// everything on the first sync and after a failure. While Run is running
// it programs the informers' view; otherwise it first lists Services and
// EndpointSlices from the API.
func (p *Proxier) Sync(ctx context.Context) error {
	p.mu.Lock()
	informed := p.informed
	p.mu.Unlock()
	if !informed {
		if err := p.refresh(ctx); err != nil {
			return err
		}
	}
	return p.sync(ctx, false)
}

// portID returns the id of a service port, allocating one if needed.
func (p *Proxier) portID(n portName) uint32 {
	if id, ok := p.ids[n]; ok {
		return id
	}
	var id uint32
	if k := len(p.freeIDs); k > 0 {
		id, p.freeIDs = p.freeIDs[k-1], p.freeIDs[:k-1]
	} else {
		p.lastID++
		id = p.lastID
	}
	p.ids[n] = id
	return id
}

// sync programs the pending changes, or everything when full is set or
// the last sync failed.
func (p *Proxier) sync(ctx context.Context, full bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	start := p.cfg.Clock.Now()

	p.mu.Lock()
	full = full || p.needFull || !p.programmed
	names := map[types.NamespacedName]struct{}{}
	if full {
		for n := range p.services {
			names[n] = struct{}{}
		}
		for n := range p.applied {
			names[n] = struct{}{}
		}
	} else {
		maps.Copy(names, p.dirty)
	}
	desired := make(map[types.NamespacedName][]*servicePort, len(names))
	for n := range names {
		desired[n] = buildService(p.services[n], sliceList(p.slices[n]), p.cfg.NodeName)
	}
	dirty, triggers := p.dirty, p.triggers
	p.dirty, p.triggers = map[types.NamespacedName]struct{}{}, map[types.NamespacedName][]time.Time{}
	p.mu.Unlock()

	ordered := slices.SortedFunc(maps.Keys(names), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var listed *objects
	var err error
	if full {
		listed, err = p.listObjects()
	}
	var b *batch
	var ph *phases
	var refs map[netip.Addr]int
	var flows []flowCleanup
	if err == nil {
		b, ph, refs, flows = p.plan(ordered, desired, listed)
		err = p.apply(b, ph, listed)
	}
	if err != nil {
		p.mu.Lock()
		p.needFull = true
		maps.Copy(p.dirty, dirty)
		for n, ts := range triggers {
			p.triggers[n] = append(ts, p.triggers[n]...)
		}
		p.mu.Unlock()
		p.m.failures.Inc()
		return err
	}
	p.commit(ordered, desired, refs, full)
	p.mu.Lock()
	p.needFull = false
	p.mu.Unlock()

	if err := p.clearFlows(flows); err != nil {
		p.log.Warn("clearing stale UDP conntrack entries", "error", err)
	}
	end := p.cfg.Clock.Now()
	p.m.observeSync(full, end.Sub(start), end)
	for _, ts := range triggers {
		for _, t := range ts {
			p.m.programming.Observe(end.Sub(t).Seconds())
		}
	}
	p.log.Debug("synced service rules", "full", full, "services", len(ordered), "operations", len(b.ops), "elapsed", end.Sub(start))
	if p.synced != nil {
		p.synced(full, ordered)
	}
	return nil
}

// commit records a successful sync as the programmed state and frees the
// ids of ports gone (after a full sync: of every port not programmed).
func (p *Proxier) commit(names []types.NamespacedName, desired map[types.NamespacedName][]*servicePort, refs map[netip.Addr]int, full bool) {
	for _, n := range names {
		cur := byName(desired[n])
		for _, o := range p.applied[n] {
			if cur[o.name] == nil {
				if id, ok := p.ids[o.name]; ok {
					delete(p.ids, o.name)
					p.freeIDs = append(p.freeIDs, id)
				}
			}
		}
		if len(desired[n]) == 0 {
			delete(p.applied, n)
		} else {
			p.applied[n] = desired[n]
		}
	}
	p.ipRefs, p.programmed = refs, true
	if full {
		for n, id := range p.ids {
			if !slices.ContainsFunc(p.applied[n.NamespacedName], func(sp *servicePort) bool { return sp.name == n }) {
				delete(p.ids, n)
				p.freeIDs = append(p.freeIDs, id)
			}
		}
	}
}

// plan computes the transaction taking the applied state to desired for
// the named services, the new cluster-ips reference counts and the UDP
// flows to forget afterwards.
//
// A full sync, planned when listed (what the table holds) is not nil,
// rewrites the skeleton and every service.
func (p *Proxier) plan(names []types.NamespacedName, desired map[types.NamespacedName][]*servicePort, listed *objects) (*batch, *phases, map[netip.Addr]int, []flowCleanup) {
	var b batch
	full := listed != nil
	if full {
		p.pl.skeleton(&b)
	}
	ph := &phases{}
	refs := map[netip.Addr]int{}
	if !full {
		maps.Copy(refs, p.ipRefs)
	}
	var flows []flowCleanup
	for _, n := range names {
		old, cur := byName(p.applied[n]), byName(desired[n])
		for _, pn := range unionNames(old, cur) {
			o, c := old[pn], cur[pn]
			var curObjs *portObjects
			if c != nil {
				curObjs = p.pl.objects(c, p.portID(pn))
				refs[c.clusterIP]++
			}
			switch {
			case full:
				p.pl.port(ph, pn.chainName(), nil, curObjs, true, listed)
			case o != nil && c != nil && o.equal(c):
			default:
				var oldObjs *portObjects
				if o != nil {
					oldObjs = p.pl.objects(o, p.ids[pn])
				}
				p.pl.port(ph, pn.chainName(), oldObjs, curObjs, false, nil)
			}
			if !full && o != nil {
				refs[o.clusterIP]--
			}
			flows = append(flows, udpCleanups(o, c)...)
		}
	}
	for ip, n := range refs {
		if n <= 0 {
			delete(refs, ip)
		}
	}
	p.pl.clusterIPs(ph, p.ipRefs, refs, full)
	return &b, ph, refs, flows
}

func byName(ps []*servicePort) map[portName]*servicePort {
	m := make(map[portName]*servicePort, len(ps))
	for _, p := range ps {
		m[p.name] = p
	}
	return m
}

func unionNames(a, b map[portName]*servicePort) []portName {
	all := map[portName]struct{}{}
	for n := range a {
		all[n] = struct{}{}
	}
	for n := range b {
		all[n] = struct{}{}
	}
	return slices.SortedFunc(maps.Keys(all), func(x, y portName) int { return cmp.Compare(x.chainName(), y.chainName()) })
}
