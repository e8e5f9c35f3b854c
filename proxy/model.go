package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels the proxy honours, as kube-proxy does.
const (
	// labelProxyName on a Service or EndpointSlice hands it to another
	// proxy implementation.
	labelProxyName = "service.kubernetes.io/service-proxy-name"
	// defaultAffinityTimeout is Kubernetes' default ClientIP affinity
	// timeout (3 hours).
	defaultAffinityTimeout = 10800 * time.Second
)

// portName identifies one port of one Service, like kube-proxy's
// ServicePortName: the port's name ("" for a lone unnamed port) and
// protocol within the Service.
type portName struct {
	types.NamespacedName
	Port     string
	Protocol corev1.Protocol
}

func (n portName) String() string {
	return fmt.Sprintf("%s/%s:%s/%s", n.Namespace, n.Name, n.Port, strings.ToLower(string(n.Protocol)))
}

// chainName is the name of the port's service chain. Kubernetes names
// hold only [a-z0-9.-], so "_" separates the parts unambiguously.
func (n portName) chainName() string {
	return "svc_" + n.Namespace + "_" + n.Name + "_" + n.Port + "_" + strings.ToLower(string(n.Protocol))
}

// endpointsName is the name of the port's endpoints map.
func (n portName) endpointsName() string {
	return "eps_" + n.Namespace + "_" + n.Name + "_" + n.Port + "_" + strings.ToLower(string(n.Protocol))
}

// affinityName is the name of the port's ClientIP affinity map; the
// timeout is part of it because a set's timeout cannot change in place.
func (n portName) affinityName(timeout time.Duration) string {
	return "aff_" + n.Namespace + "_" + n.Name + "_" + n.Port + "_" + strings.ToLower(string(n.Protocol)) +
		"_" + strconv.Itoa(int(timeout/time.Second))
}

// servicePort is everything the rules of one Service port depend on; two
// equal servicePorts program identical rules.
type servicePort struct {
	name      portName
	clusterIP netip.Addr
	port      uint16
	proto     uint8
	// affinity is the ClientIP affinity timeout; 0 means no affinity.
	affinity time.Duration
	// endpoints are the usable endpoints, sorted and unique.
	endpoints []netip.AddrPort
	// drop is set when the port has no usable endpoints because its
	// internalTrafficPolicy is Local and none are on this node while
	// others exist: traffic is dropped rather than rejected.
	drop bool
}

func (s *servicePort) equal(o *servicePort) bool {
	return s.name == o.name && s.clusterIP == o.clusterIP && s.port == o.port && s.proto == o.proto &&
		s.affinity == o.affinity && s.drop == o.drop && slices.Equal(s.endpoints, o.endpoints)
}

// sameKey reports whether both ports are reached at the same
// ClusterIP, protocol and port.
func (s *servicePort) sameKey(o *servicePort) bool {
	return s.clusterIP == o.clusterIP && s.port == o.port && s.proto == o.proto
}

func protoNumber(p corev1.Protocol) (uint8, bool) {
	switch p {
	case corev1.ProtocolTCP, "":
		return unix.IPPROTO_TCP, true
	case corev1.ProtocolUDP:
		return unix.IPPROTO_UDP, true
	case corev1.ProtocolSCTP:
		return unix.IPPROTO_SCTP, true
	}
	return 0, false
}

func protoName(p uint8) string {
	switch p {
	case unix.IPPROTO_TCP:
		return "tcp"
	case unix.IPPROTO_UDP:
		return "udp"
	case unix.IPPROTO_SCTP:
		return "sctp"
	}
	return strconv.Itoa(int(p))
}

// serviceIPv4 returns the Service's IPv4 ClusterIP, if it has one.
func serviceIPv4(svc *corev1.Service) (netip.Addr, bool) {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// proxied reports whether this proxy handles the Service at all: not an
// ExternalName, not headless, an IPv4 ClusterIP, not claimed by another
// proxy.
func proxied(svc *corev1.Service) bool {
	if svc == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return false
	}
	if _, ok := svc.Labels[labelProxyName]; ok {
		return false
	}
	_, ok := serviceIPv4(svc)
	return ok
}

// buildService computes the ports of svc from its EndpointSlices, as seen
// from node. It returns nothing for a Service the proxy does not handle.
func buildService(svc *corev1.Service, eps []*discoveryv1.EndpointSlice, node string) []*servicePort {
	if !proxied(svc) {
		return nil
	}
	ip, _ := serviceIPv4(svc)
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	var affinity time.Duration
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = defaultAffinityTimeout
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
			affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	local := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	var out []*servicePort
	for _, sp := range svc.Spec.Ports {
		proto, ok := protoNumber(sp.Protocol)
		if !ok || sp.Port <= 0 || sp.Port > 65535 {
			continue
		}
		p := &servicePort{
			name:      portName{NamespacedName: nn, Port: sp.Name, Protocol: normProto(sp.Protocol)},
			clusterIP: ip,
			port:      uint16(sp.Port),
			proto:     proto,
			affinity:  affinity,
		}
		p.endpoints, p.drop = selectEndpoints(sp, eps, node, local)
		out = append(out, p)
	}
	return out
}

func normProto(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// selectEndpoints picks the usable endpoints of one Service port, the way
// kube-proxy does: ready endpoints, or, when none is ready, those still
// serving while terminating (so connections drain during a rollout). With
// local set only endpoints on node count; drop is then true when other
// nodes have usable endpoints but this one has none.
func selectEndpoints(sp corev1.ServicePort, eps []*discoveryv1.EndpointSlice, node string, local bool) (_ []netip.AddrPort, drop bool) {
	var ready, terminating []netip.AddrPort
	var elsewhere bool
	for _, s := range eps {
		if s == nil || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		if _, ok := s.Labels[labelProxyName]; ok {
			continue
		}
		port, ok := slicePort(s, sp)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			a, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil || !a.Is4() {
				continue
			}
			c := ep.Conditions
			isReady := c.Ready == nil || *c.Ready
			serving := c.Serving == nil || *c.Serving
			term := c.Terminating != nil && *c.Terminating
			if local && (ep.NodeName == nil || *ep.NodeName != node) {
				if isReady || (serving && term) {
					elsewhere = true
				}
				continue
			}
			ap := netip.AddrPortFrom(a, port)
			switch {
			case isReady:
				ready = append(ready, ap)
			case serving && term:
				terminating = append(terminating, ap)
			}
		}
	}
	use := ready
	if len(use) == 0 {
		use = terminating
	}
	slices.SortFunc(use, netip.AddrPort.Compare)
	use = slices.Compact(use)
	return use, len(use) == 0 && elsewhere
}

// slicePort finds the slice's port number for the Service port: same
// name and protocol, as the EndpointSlice controller writes them.
func slicePort(s *discoveryv1.EndpointSlice, sp corev1.ServicePort) (uint16, bool) {
	for _, p := range s.Ports {
		name, proto := "", corev1.ProtocolTCP
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == normProto(sp.Protocol) && p.Port != nil && *p.Port > 0 && *p.Port <= 65535 {
			return uint16(*p.Port), true
		}
	}
	return 0, false
}

// hasEndpoints reports whether the port has usable endpoints (and so a
// service chain).
func hasEndpoints(p *servicePort) bool { return p != nil && len(p.endpoints) > 0 }
