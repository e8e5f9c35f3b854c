package dns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Server is the cluster DNS server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	zone    string // lower-case FQDN, "cluster.local."
	ttl     uint32
	factory informers.SharedInformerFactory
	ownInf  bool // the factory is the server's own: Run shuts it down
	store   *store
	fwd     *forwarder
	metrics *metrics
	sockets *Sockets
	label   string     // the metrics' server label, dns://<addr>
	nsAddr  netip.Addr // ns.dns.<zone>: the listen address when specific

	// ctx is the Run context forwarded exchanges derive from.
	ctx    atomic.Pointer[context.Context]
	synced atomic.Bool
	ready  chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
}

var _ mdns.Handler = (*Server)(nil)

// New validates cfg, registers the informers and their indexers and opens
// the sockets (unless cfg.Sockets are given), so Addr is known at once.
// Call Run to serve, or Close to release the sockets without serving.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	factory, own := cfg.Informers, cfg.Informers == nil
	if own {
		factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	}
	st, err := newStore(factory)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		zone:    cfg.Domain + ".",
		ttl:     uint32(cfg.TTL / time.Second),
		factory: factory,
		ownInf:  own,
		store:   st,
		metrics: m,
		ready:   make(chan struct{}),
	}
	s.fwd = newForwarder(cfg.Upstreams, cfg.ForwardTimeout, m)
	s.sockets = cfg.Sockets
	if s.sockets == nil {
		if s.sockets, err = Listen(context.Background(), cfg.Addr); err != nil {
			return nil, err
		}
	}
	addr := s.sockets.Addr()
	s.label = "dns://" + addr.String()
	if ua, ok := addr.(*net.UDPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ua.IP); ok && !ip.Unmap().IsUnspecified() {
			s.nsAddr = ip.Unmap()
		}
	}
	return s, nil
}

// Addr is the address the server listens on (UDP and TCP).
func (s *Server) Addr() net.Addr { return s.sockets.Addr() }

// Ready is closed once the informer caches synced and the sockets serve.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Close releases the sockets of a server that is not running; Run closes
// them itself when it returns. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return nil
	}
	s.closed = true
	return s.sockets.Close()
}

// Run starts the informers, waits for their caches, serves UDP and TCP and
// blocks until ctx is cancelled (nil then) or serving fails. Questions
// arriving before the caches synced wait in the socket buffers. Run closes
// the sockets before it returns; it may be called once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return ErrStarted
	}
	s.started = true
	s.mu.Unlock()
	defer s.sockets.Close()
	if s.ownInf {
		defer s.factory.Shutdown() // waits for the informers, stopped by cancel below
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx.Store(&ctx)

	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.store.services.HasSynced, s.store.slices.HasSynced) {
		return nil // cancelled
	}
	s.synced.Store(true)

	udp := &mdns.Server{PacketConn: s.sockets.UDP, Handler: s, UDPSize: mdns.MaxMsgSize}
	tcp := &mdns.Server{Listener: s.sockets.TCP, Handler: s}
	servers := []*mdns.Server{udp, tcp}
	errc := make(chan error, len(servers))
	started := make(chan struct{}, len(servers))
	for _, srv := range servers {
		srv.NotifyStartedFunc = func() { started <- struct{}{} }
		go func() { errc <- srv.ActivateAndServe() }()
	}
	running, returned := 0, 0
	var serveErr error
	for running < len(servers) && serveErr == nil {
		select {
		case <-started:
			running++
		case err := <-errc:
			returned++
			serveErr = fmt.Errorf("dns: serving %s: %w", s.Addr(), err)
		}
	}
	if serveErr == nil {
		close(s.ready)
		s.log.Info("cluster DNS serving", "addr", s.Addr().String(), "zone", s.zone, "upstreams", s.cfg.Upstreams)
		select {
		case <-ctx.Done():
		case err := <-errc:
			returned++
			serveErr = fmt.Errorf("dns: serving %s: %w", s.Addr(), err)
		}
	}
	shutdownCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	for _, srv := range servers {
		_ = srv.ShutdownContext(shutdownCtx) // "not started" for one that failed
	}
	_ = s.sockets.Close() // also ends a server that started after its shutdown
	for ; returned < len(servers); returned++ {
		<-errc
	}
	return serveErr
}

// ServeDNS answers one query; it implements miekg/dns's Handler so the
// server can also sit behind a listener of the caller's. Until Run has
// synced the caches it answers SERVFAIL rather than a false NXDOMAIN.
func (s *Server) ServeDNS(w mdns.ResponseWriter, req *mdns.Msg) {
	start := time.Now()
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	m, zone := s.handle(req, tcp)
	size := mdns.MinMsgSize
	if tcp {
		size = mdns.MaxMsgSize
	}
	if o := req.IsEdns0(); o != nil {
		size = max(int(o.UDPSize()), mdns.MinMsgSize)
		if tcp {
			size = mdns.MaxMsgSize
		}
	}
	m.Truncate(size)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("dns: writing answer", "remote", w.RemoteAddr().String(), "err", err)
	}

	qtype := "other"
	if len(req.Question) == 1 {
		qtype = typeLabel(req.Question[0].Qtype)
	}
	proto, family := "udp", "1"
	if tcp {
		proto = "tcp"
	}
	if ip, ok := remoteIP(w); ok && ip.Is6() && !ip.Is4In6() {
		family = "2"
	}
	s.metrics.requests.WithLabelValues(s.label, zone, proto, family, qtype).Inc()
	s.metrics.responses.WithLabelValues(s.label, zone, rcodeLabel(m.Rcode)).Inc()
	s.metrics.duration.WithLabelValues(s.label, zone, qtype).Observe(time.Since(start).Seconds())
}

// handle builds the response to req and names the metrics zone.
func (s *Server) handle(req *mdns.Msg, tcp bool) (*mdns.Msg, string) {
	m := new(mdns.Msg)
	m.SetReply(req)
	m.Compress = true
	m.RecursionAvailable = s.fwd != nil
	if len(req.Question) != 1 {
		m.Rcode = mdns.RcodeFormatError
		return m, "."
	}
	q := req.Question[0]
	if o := req.IsEdns0(); o != nil {
		m.SetEdns0(min(max(o.UDPSize(), mdns.MinMsgSize), 4096), o.Do())
	}
	if !s.synced.Load() {
		m.Rcode = mdns.RcodeServerFailure
		return m, "."
	}
	if q.Qclass != mdns.ClassINET && q.Qclass != mdns.ClassANY {
		m.Rcode = mdns.RcodeRefused
		return m, "."
	}
	name := strings.ToLower(mdns.Fqdn(q.Name))
	ctx := s.runContext()
	r := &reply{}
	switch {
	case mdns.IsSubDomain(s.zone, name):
		m.Authoritative = true
		s.cluster(ctx, r, q.Name, q.Qtype, s.relLabels(name), 0)
		s.fill(m, r)
		return m, s.zone
	case s.reverseKnown(r, q, name):
		m.Authoritative = true
		s.fill(m, r)
		return m, "."
	case s.fwd == nil:
		m.Rcode = mdns.RcodeRefused
		return m, "."
	}
	resp, err := s.fwd.exchange(ctx, req, tcp)
	if err != nil {
		s.log.Debug("dns: forward failed", "err", err)
		m.Rcode = mdns.RcodeServerFailure
		return m, "."
	}
	resp.RecursionAvailable = true
	return resp, "."
}

func (s *Server) reverseKnown(r *reply, q mdns.Question, name string) bool {
	ip, ok := reverseAddr(name)
	return ok && s.reverse(r, q.Name, q.Qtype, ip)
}

func (s *Server) fill(m *mdns.Msg, r *reply) {
	m.Rcode = r.rcode
	m.Answer = append(m.Answer, r.answer...)
	m.Extra = append(r.extra, m.Extra...) // any OPT stays last
	if r.negative {
		m.Ns = append(m.Ns, s.soa())
	}
}

func (s *Server) runContext() context.Context {
	if p := s.ctx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

func remoteIP(w mdns.ResponseWriter) (netip.Addr, bool) {
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		return netip.AddrFromSlice(a.IP)
	case *net.TCPAddr:
		return netip.AddrFromSlice(a.IP)
	}
	return netip.Addr{}, false
}
