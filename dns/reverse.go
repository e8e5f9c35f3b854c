package dns

import (
	"net/netip"
	"strconv"
	"strings"

	mdns "github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
)

const (
	v4ReverseZone = ".in-addr.arpa."
	v6ReverseZone = ".ip6.arpa."
)

// reverseAddr parses a full reverse name (4 octets under in-addr.arpa, 32
// nibbles under ip6.arpa); ok is false for anything else, including the
// partial names of a classless delegation.
func reverseAddr(name string) (netip.Addr, bool) {
	switch {
	case strings.HasSuffix(name, v4ReverseZone):
		parts := strings.Split(strings.TrimSuffix(name, v4ReverseZone), ".")
		if len(parts) != 4 {
			return netip.Addr{}, false
		}
		var b [4]byte
		for i, p := range parts {
			n, err := strconv.ParseUint(p, 10, 8)
			if err != nil || (len(p) > 1 && p[0] == '0') {
				return netip.Addr{}, false
			}
			b[3-i] = byte(n)
		}
		return netip.AddrFrom4(b), true
	case strings.HasSuffix(name, v6ReverseZone):
		parts := strings.Split(strings.TrimSuffix(name, v6ReverseZone), ".")
		if len(parts) != 32 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i, p := range parts {
			if len(p) != 1 {
				return netip.Addr{}, false
			}
			n, err := strconv.ParseUint(p, 16, 8)
			if err != nil {
				return netip.Addr{}, false
			}
			pos := 31 - i // nibble index from the most significant
			if pos%2 == 0 {
				b[pos/2] |= byte(n) << 4
			} else {
				b[pos/2] |= byte(n)
			}
		}
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

// reverse answers a reverse name the cluster knows: a ClusterIP names its
// Service, a ready endpoint of a headless Service names
// <host>.<svc>.<ns>.svc.<zone>. It reports false for other addresses, which
// are forwarded.
func (s *Server) reverse(r *reply, qname string, qtype uint16, ip netip.Addr) bool {
	var targets []string
	for _, svc := range s.store.servicesByIP(ip) {
		targets = append(targets, svc.Name+"."+svc.Namespace+".svc."+s.zone)
	}
	for _, es := range s.store.slicesByIP(ip) {
		targets = append(targets, s.endpointNames(es, ip)...)
	}
	if len(targets) == 0 {
		return false
	}
	if qtype == mdns.TypePTR || qtype == mdns.TypeANY {
		seen := map[string]bool{}
		for _, t := range targets {
			if !seen[t] {
				seen[t] = true
				r.answer = append(r.answer, &mdns.PTR{Hdr: s.hdr(qname, mdns.TypePTR), Ptr: t})
			}
		}
	}
	r.nodata()
	return true
}

// endpointNames returns the names of ip in es when es belongs to a
// headless Service that lists ip as a ready endpoint.
func (s *Server) endpointNames(es *discoveryv1.EndpointSlice, ip netip.Addr) []string {
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	svc := s.store.service(es.Namespace, name)
	if svc == nil || !isHeadless(svc) {
		return nil
	}
	var out []string
	for _, ep := range s.store.endpoints(svc) {
		if ep.addr == ip {
			out = append(out, ep.hostname+"."+svc.Name+"."+svc.Namespace+".svc."+s.zone)
		}
	}
	return out
}
