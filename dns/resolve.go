package dns

import (
	"context"
	"strings"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// maxChase bounds the CNAME chain followed for ExternalName Services.
const maxChase = 8

// cluster answers a question for a name inside the cluster zone. labels
// are the lower-case labels left of the zone, e.g. [web default svc].
func (s *Server) cluster(ctx context.Context, r *reply, qname string, qtype uint16, labels []string, depth int) {
	n := len(labels)
	switch {
	case n == 0:
		s.apex(r, qname, qtype)
	case labels[n-1] == "svc":
		s.svcZone(ctx, r, qname, qtype, labels[:n-1], depth)
	case labels[n-1] == "pod":
		s.podZone(r, qname, qtype, labels[:n-1])
	case n == 1 && labels[0] == "dns-version":
		if qtype == mdns.TypeTXT || qtype == mdns.TypeANY {
			r.answer = append(r.answer, &mdns.TXT{Hdr: s.hdr(qname, mdns.TypeTXT), Txt: []string{SchemaVersion}})
		}
		r.nodata()
	case n == 1 && labels[0] == "dns":
		r.nodata()
	case n == 2 && labels[0] == "ns" && labels[1] == "dns":
		if s.nsAddr.IsValid() && wantsAddr(qtype, s.nsAddr) {
			r.answer = append(r.answer, s.addr(qname, s.nsAddr))
		}
		r.nodata()
	default:
		r.nxdomain()
	}
}

func (s *Server) apex(r *reply, qname string, qtype uint16) {
	switch qtype {
	case mdns.TypeSOA:
		soa := s.soa()
		soa.Header().Name = qname
		r.answer = append(r.answer, soa)
	case mdns.TypeNS:
		r.answer = append(r.answer, &mdns.NS{Hdr: s.hdr(qname, mdns.TypeNS), Ns: "ns.dns." + s.zone})
		if s.nsAddr.IsValid() {
			r.extra = append(r.extra, s.addr("ns.dns."+s.zone, s.nsAddr))
		}
	}
	r.nodata()
}

// svcZone handles <...>.svc.<zone>; labels are the ones left of "svc".
func (s *Server) svcZone(ctx context.Context, r *reply, qname string, qtype uint16, labels []string, depth int) {
	switch len(labels) {
	case 0: // svc.<zone>
		r.nodata()
	case 1: // <ns>.svc.<zone>
		if s.store.namespaceHasServices(labels[0]) {
			r.nodata()
		} else {
			r.nxdomain()
		}
	case 2: // <svc>.<ns>.svc.<zone>
		svc := s.store.service(labels[1], labels[0])
		if svc == nil {
			r.nxdomain()
			return
		}
		s.serviceRecords(ctx, r, qname, qtype, svc, depth)
	case 3: // _<proto>.<svc>.<ns> or <host>.<svc>.<ns>
		svc := s.store.service(labels[2], labels[1])
		if svc == nil {
			r.nxdomain()
			return
		}
		if proto, ok := strings.CutPrefix(labels[0], "_"); ok {
			if len(s.srvRecords(r, qname, svc, "", proto, false)) > 0 {
				r.nodata() // an empty non-terminal above _<port>
			} else {
				r.nxdomain()
			}
			return
		}
		s.hostRecords(r, qname, qtype, svc, labels[0])
	case 4: // _<port>._<proto>.<svc>.<ns>
		port, ok1 := strings.CutPrefix(labels[0], "_")
		proto, ok2 := strings.CutPrefix(labels[1], "_")
		svc := s.store.service(labels[3], labels[2])
		if !ok1 || !ok2 || port == "" || svc == nil {
			r.nxdomain()
			return
		}
		records := s.srvRecords(r, qname, svc, port, proto, qtype == mdns.TypeSRV || qtype == mdns.TypeANY)
		if len(records) == 0 {
			r.nxdomain()
			return
		}
		r.nodata()
	default:
		// Deeper than the schema: the first names of an ndots:5 search
		// list end up here.
		r.nxdomain()
	}
}

// serviceRecords answers for the Service name itself.
func (s *Server) serviceRecords(ctx context.Context, r *reply, qname string, qtype uint16, svc *corev1.Service, depth int) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		s.externalName(ctx, r, qname, qtype, svc, depth)
		return
	}
	if isHeadless(svc) {
		eps := s.store.endpoints(svc)
		if len(eps) == 0 {
			r.nxdomain() // the spec: no ready endpoints, no name
			return
		}
		for _, ep := range eps {
			if wantsAddr(qtype, ep.addr) {
				r.answer = append(r.answer, s.addr(qname, ep.addr))
			}
		}
	} else {
		for _, ip := range clusterIPs(svc) {
			if wantsAddr(qtype, ip) {
				r.answer = append(r.answer, s.addr(qname, ip))
			}
		}
	}
	if qtype == mdns.TypeSRV {
		s.srvRecords(r, qname, svc, "", "", true)
	}
	r.nodata()
}

// hostRecords answers <host>.<svc>.<ns>.svc.<zone>: the ready endpoints of
// a headless Service whose hostname (or dashed address) is host.
func (s *Server) hostRecords(r *reply, qname string, qtype uint16, svc *corev1.Service, host string) {
	if !isHeadless(svc) {
		r.nxdomain()
		return
	}
	found := false
	for _, ep := range s.store.endpoints(svc) {
		if ep.hostname != host {
			continue
		}
		found = true
		if wantsAddr(qtype, ep.addr) {
			r.answer = append(r.answer, s.addr(qname, ep.addr))
		}
	}
	if !found {
		r.nxdomain()
		return
	}
	r.nodata()
}

// srvRecords builds the SRV records of svc's named ports matching port
// (any named port when "") and proto (any when ""). With add they and
// their targets' addresses go into r; the records are returned either way
// so callers can tell whether the name exists.
func (s *Server) srvRecords(r *reply, qname string, svc *corev1.Service, port, proto string, add bool) []mdns.RR {
	fqdn := svc.Name + "." + svc.Namespace + ".svc." + s.zone
	var srvs, extra []mdns.RR
	type match struct {
		target string
		port   int32
	}
	var matches []match
	if isHeadless(svc) {
		for _, ep := range s.store.endpoints(svc) {
			target := ep.hostname + "." + fqdn
			hit := false
			for _, p := range ep.ports {
				if p.Port == nil || p.Name == nil || !portMatches(*p.Name, protoOf(p.Protocol), port, proto) {
					continue
				}
				matches = append(matches, match{target, *p.Port})
				hit = true
			}
			if hit && add {
				extra = append(extra, s.addr(target, ep.addr))
			}
		}
	} else {
		for _, p := range svc.Spec.Ports {
			if !portMatches(p.Name, protoOf(&p.Protocol), port, proto) {
				continue
			}
			matches = append(matches, match{fqdn, p.Port})
		}
		if len(matches) > 0 && add {
			for _, ip := range clusterIPs(svc) {
				extra = append(extra, s.addr(fqdn, ip))
			}
		}
	}
	w := srvWeight(len(matches))
	for _, m := range matches {
		srvs = append(srvs, s.srv(qname, m.target, m.port, w))
	}
	if add {
		r.answer = append(r.answer, srvs...)
		r.extra = dedupe(append(r.extra, extra...))
	}
	return srvs
}

// portMatches: unnamed ports have no SRV records.
func portMatches(name, protocol, wantName, wantProto string) bool {
	if name == "" {
		return false
	}
	if wantName != "" && !strings.EqualFold(name, wantName) {
		return false
	}
	return wantProto == "" || strings.EqualFold(protocol, wantProto)
}

func protoOf(p *corev1.Protocol) string {
	if p == nil || *p == "" {
		return "tcp"
	}
	return strings.ToLower(string(*p))
}

// externalName answers a CNAME to the Service's externalName and, unless
// the question is for the CNAME itself, follows it through the cluster zone
// or the upstreams so stub resolvers get the addresses in one answer.
func (s *Server) externalName(ctx context.Context, r *reply, qname string, qtype uint16, svc *corev1.Service, depth int) {
	target := mdns.Fqdn(strings.ToLower(svc.Spec.ExternalName))
	if _, ok := mdns.IsDomainName(target); !ok || svc.Spec.ExternalName == "" {
		r.nodata()
		return
	}
	r.answer = append(r.answer, &mdns.CNAME{Hdr: s.hdr(qname, mdns.TypeCNAME), Target: target})
	if qtype == mdns.TypeCNAME || depth >= maxChase {
		return
	}
	if mdns.IsSubDomain(s.zone, target) {
		r.negative = false
		s.cluster(ctx, r, target, qtype, s.relLabels(target), depth+1)
		return
	}
	if s.fwd == nil {
		return
	}
	q := new(mdns.Msg)
	q.SetQuestion(target, qtype)
	resp, err := s.fwd.exchange(ctx, q, false)
	if err != nil || resp.Truncated {
		return // the CNAME alone; the client resolves the target itself
	}
	r.answer = append(r.answer, resp.Answer...)
	r.rcode = resp.Rcode
}

// relLabels returns the lower-case labels of name left of the zone.
func (s *Server) relLabels(name string) []string {
	rel := strings.TrimSuffix(name[:len(name)-len(s.zone)], ".")
	if rel == "" {
		return nil
	}
	return strings.Split(rel, ".")
}

// podZone handles <...>.pod.<zone>: <a-b-c-d>.<ns>.pod.<zone> answers the
// address spelled by its first label for any namespace (the insecure pod
// mode), so <ns>.pod.<zone> and pod.<zone> exist as empty non-terminals.
func (s *Server) podZone(r *reply, qname string, qtype uint16, labels []string) {
	switch len(labels) {
	case 0, 1:
		r.nodata()
	case 2:
		ip, ok := undashed(labels[0])
		if !ok {
			r.nxdomain()
			return
		}
		if wantsAddr(qtype, ip) {
			r.answer = append(r.answer, s.addr(qname, ip))
		}
		r.nodata()
	default:
		r.nxdomain()
	}
}
