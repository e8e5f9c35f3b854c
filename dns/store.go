package dns

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Indexers the server adds to the shared informers.
const (
	indexByIP      = "podkit-dns/ip"      // services by ClusterIP, slices by endpoint address
	indexByService = "podkit-dns/service" // slices by namespace/service-name label
)

// tolerateUnreadyAnnotation is the deprecated annotation the DNS spec still
// names as making every endpoint ready.
const tolerateUnreadyAnnotation = "service.alpha.kubernetes.io/tolerate-unready-endpoints"

// store answers lookups from the Service and EndpointSlice informer caches.
type store struct {
	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	// serial is the SOA serial: the Unix time of the last change seen.
	serial atomic.Uint32
}

func newStore(f informers.SharedInformerFactory) (*store, error) {
	s := &store{
		services: f.Core().V1().Services().Informer(),
		slices:   f.Discovery().V1().EndpointSlices().Informer(),
	}
	s.serial.Store(uint32(time.Now().Unix()))
	if err := s.services.AddIndexers(cache.Indexers{indexByIP: serviceIPs}); err != nil {
		return nil, fmt.Errorf("dns: service indexer: %w", err)
	}
	if err := s.slices.AddIndexers(cache.Indexers{indexByIP: sliceIPs, indexByService: sliceService}); err != nil {
		return nil, fmt.Errorf("dns: endpointslice indexer: %w", err)
	}
	bump := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.serial.Store(uint32(time.Now().Unix())) },
		UpdateFunc: func(any, any) { s.serial.Store(uint32(time.Now().Unix())) },
		DeleteFunc: func(any) { s.serial.Store(uint32(time.Now().Unix())) },
	}
	for _, inf := range []cache.SharedIndexInformer{s.services, s.slices} {
		if _, err := inf.AddEventHandler(bump); err != nil {
			return nil, fmt.Errorf("dns: event handler: %w", err)
		}
	}
	return s, nil
}

func (s *store) synced() bool { return s.services.HasSynced() && s.slices.HasSynced() }

func serviceIPs(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ip := range clusterIPs(svc) {
		out = append(out, ip.String())
	}
	return out, nil
}

func sliceIPs(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ep := range es.Endpoints {
		for _, a := range ep.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, ip.Unmap().String())
			}
		}
	}
	return out, nil
}

func sliceService(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil, nil
	}
	return []string{es.Namespace + "/" + strings.ToLower(name)}, nil
}

// service returns the Service ns/name or nil.
func (s *store) service(ns, name string) *corev1.Service {
	obj, ok, err := s.services.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*corev1.Service)
	return svc
}

// namespaceHasServices reports whether any Service lives in ns, which is
// how the server tells an existing <ns>.svc.<zone> (NODATA) from a missing
// one (NXDOMAIN) without watching namespaces.
func (s *store) namespaceHasServices(ns string) bool {
	objs, err := s.services.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	return err == nil && len(objs) > 0
}

func (s *store) servicesByIP(ip netip.Addr) []*corev1.Service {
	objs, err := s.services.GetIndexer().ByIndex(indexByIP, ip.String())
	if err != nil {
		return nil
	}
	out := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			out = append(out, svc)
		}
	}
	return out
}

func (s *store) slicesByIP(ip netip.Addr) []*discoveryv1.EndpointSlice {
	objs, err := s.slices.GetIndexer().ByIndex(indexByIP, ip.String())
	if err != nil {
		return nil
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, es)
		}
	}
	return out
}

// endpoint is one ready address of a Service.
type endpoint struct {
	addr     netip.Addr
	hostname string // the endpoint's hostname, or its dashed address
	ports    []discoveryv1.EndpointPort
}

// endpoints merges the ready endpoints of all of svc's slices, one per
// address, ordered as the slices list them (slices by name).
func (s *store) endpoints(svc *corev1.Service) []endpoint {
	objs, err := s.slices.GetIndexer().ByIndex(indexByService, svc.Namespace+"/"+svc.Name)
	if err != nil || len(objs) == 0 {
		return nil
	}
	list := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok && es.AddressType != discoveryv1.AddressTypeFQDN {
			list = append(list, es)
		}
	}
	sortSlices(list)
	tolerate := svc.Spec.PublishNotReadyAddresses || svc.Annotations[tolerateUnreadyAnnotation] == "true"
	seen := map[netip.Addr]bool{}
	var out []endpoint
	for _, es := range list {
		for i := range es.Endpoints {
			ep := &es.Endpoints[i]
			if !tolerate && ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil {
					continue
				}
				ip = ip.Unmap()
				if seen[ip] {
					continue
				}
				seen[ip] = true
				host := dashed(ip)
				if ep.Hostname != nil && *ep.Hostname != "" {
					host = strings.ToLower(*ep.Hostname)
				}
				out = append(out, endpoint{addr: ip, hostname: host, ports: es.Ports})
			}
		}
	}
	return out
}

func sortSlices(s []*discoveryv1.EndpointSlice) {
	slices.SortFunc(s, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
}

// clusterIPs returns a Service's allocated ClusterIPs (none for headless,
// ExternalName or not yet allocated Services).
func clusterIPs(svc *corev1.Service) []netip.Addr {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone
}

// dashed writes an address the way pod and endpoint names spell it:
// 10-244-1-5, 2001-db8--1.
func dashed(ip netip.Addr) string {
	if ip.Is4() {
		return strings.ReplaceAll(ip.String(), ".", "-")
	}
	return strings.ReplaceAll(ip.String(), ":", "-")
}

// undashed parses a dashed address; ok is false when label is not one.
func undashed(label string) (netip.Addr, bool) {
	if strings.Count(label, "-") == 3 {
		ip, err := netip.ParseAddr(strings.ReplaceAll(label, "-", "."))
		if err == nil && ip.Is4() {
			return ip, true
		}
		// fall through: an IPv6 address may have three dashes too
	}
	ip, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ":"))
	if err != nil || !ip.Is6() || ip.Is4In6() || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip, true
}
