package dns

import (
	"net"
	"net/netip"

	mdns "github.com/miekg/dns"
)

// reply accumulates an answer: the records, the rcode and whether a
// negative answer needs the SOA.
type reply struct {
	rcode  int
	answer []mdns.RR
	extra  []mdns.RR
	// negative: NXDOMAIN or NODATA, the SOA goes into the authority
	// section.
	negative bool
}

func (r *reply) nxdomain() { r.rcode, r.negative = mdns.RcodeNameError, true }

// nodata records that the name exists without records of the type, unless
// records were already added (then it is a plain NOERROR answer).
func (r *reply) nodata() {
	if len(r.answer) == 0 {
		r.negative = true
	}
}

func (s *Server) hdr(name string, t uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: name, Rrtype: t, Class: mdns.ClassINET, Ttl: s.ttl}
}

// addr returns an A or AAAA record for ip.
func (s *Server) addr(name string, ip netip.Addr) mdns.RR {
	if ip.Is4() {
		a := ip.As4()
		return &mdns.A{Hdr: s.hdr(name, mdns.TypeA), A: net.IP(a[:])}
	}
	a := ip.As16()
	return &mdns.AAAA{Hdr: s.hdr(name, mdns.TypeAAAA), AAAA: net.IP(a[:])}
}

// wantsAddr reports whether an address of ip's family answers qtype.
func wantsAddr(qtype uint16, ip netip.Addr) bool {
	switch qtype {
	case mdns.TypeA:
		return ip.Is4()
	case mdns.TypeAAAA:
		return ip.Is6()
	case mdns.TypeANY:
		return true
	}
	return false
}

func (s *Server) srv(name, target string, port int32, weight uint16) mdns.RR {
	return &mdns.SRV{Hdr: s.hdr(name, mdns.TypeSRV), Priority: 0, Weight: weight, Port: uint16(port), Target: target}
}

func (s *Server) soa() mdns.RR {
	return &mdns.SOA{
		Hdr:     s.hdr(s.zone, mdns.TypeSOA),
		Ns:      "ns.dns." + s.zone,
		Mbox:    "hostmaster." + s.zone,
		Serial:  s.store.serial.Load(),
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  s.ttl,
	}
}

// srvWeight spreads the weight over n records as CoreDNS does.
func srvWeight(n int) uint16 {
	if n <= 1 {
		return 100
	}
	w := 100 / n
	if w < 1 {
		w = 1
	}
	return uint16(w)
}

// dedupe drops repeated records (the same target address listed for
// several ports).
func dedupe(rrs []mdns.RR) []mdns.RR {
	if len(rrs) < 2 {
		return rrs
	}
	seen := make(map[string]bool, len(rrs))
	out := rrs[:0]
	for _, rr := range rrs {
		k := rr.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, rr)
	}
	return out
}
