package endpointslice

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/controller"
)

// MaxEndpointsPerEndpoints is how many addresses an Endpoints object keeps;
// beyond it the controller truncates and sets the
// endpoints.kubernetes.io/over-capacity annotation, as Kubernetes does.
const MaxEndpointsPerEndpoints = 1000

// desiredSubsets computes the Endpoints subsets of svc: each address (a
// pod's IP of the Service's primary family) with the set of ports it
// resolves, addresses sharing a port set packed into one subset, ready
// ones in addresses and the others in notReadyAddresses. Terminating pods
// are left out unless the Service publishes not-ready addresses.
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	type entry struct {
		addr  corev1.EndpointAddress
		ready bool
		ports []corev1.EndpointPort
	}
	var entries []entry
	headlessNoPorts := len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone
	for _, pod := range pods {
		if !includePod(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		addr, ok := podAddress(svc, pod)
		if !ok {
			continue
		}
		e := entry{addr: addr, ready: svc.Spec.PublishNotReadyAddresses || controller.IsPodReady(pod)}
		if !headlessNoPorts {
			for i := range svc.Spec.Ports {
				sp := &svc.Spec.Ports[i]
				n, err := findPort(pod, sp)
				if err != nil {
					continue
				}
				e.ports = append(e.ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: protocol(sp.Protocol), AppProtocol: sp.AppProtocol})
			}
			if len(e.ports) == 0 {
				continue
			}
		}
		slices.SortFunc(e.ports, cmpPort)
		entries = append(entries, e)
	}

	bySet := map[string]*corev1.EndpointSubset{}
	var keys []string
	for _, e := range entries {
		k := subsetKey(e.ports)
		ss := bySet[k]
		if ss == nil {
			ss = &corev1.EndpointSubset{Ports: e.ports}
			bySet[k] = ss
			keys = append(keys, k)
		}
		if e.ready {
			ss.Addresses = append(ss.Addresses, e.addr)
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, e.addr)
		}
	}
	slices.Sort(keys)
	out := []corev1.EndpointSubset{}
	for _, k := range keys {
		ss := bySet[k]
		slices.SortFunc(ss.Addresses, cmpAddress)
		slices.SortFunc(ss.NotReadyAddresses, cmpAddress)
		out = append(out, *ss)
	}
	return out
}

// podAddress is the pod's address for svc: its IP of the Service's first
// family (or, for a Service without families or ClusterIP, of its first IP).
func podAddress(svc *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	ips := podIPs(pod)
	if len(ips) == 0 {
		return corev1.EndpointAddress{}, false
	}
	var want6 bool
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		want6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case hasClusterIP(svc):
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		want6 = err == nil && ip.Unmap().Is6()
	default:
		want6 = ips[0].Is6()
	}
	for _, ip := range ips {
		if ip.Is6() == want6 {
			a := corev1.EndpointAddress{
				IP:        ip.String(),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			}
			if pod.Spec.NodeName != "" {
				node := pod.Spec.NodeName
				a.NodeName = &node
			}
			if setHostname(pod, svc) {
				a.Hostname = pod.Spec.Hostname
			}
			return a, true
		}
	}
	return corev1.EndpointAddress{}, false
}

func cmpPort(a, b corev1.EndpointPort) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(string(a.Protocol), string(b.Protocol)), cmp.Compare(a.Port, b.Port))
}

func subsetKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		app := ""
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		b.WriteString(p.Name + "/" + string(p.Protocol) + "/" + app + "/" + strconv.Itoa(int(p.Port)) + ",")
	}
	return b.String()
}

func cmpAddress(a, b corev1.EndpointAddress) int {
	ia, ea := netip.ParseAddr(a.IP)
	ib, eb := netip.ParseAddr(b.IP)
	if ea == nil && eb == nil {
		if c := ia.Compare(ib); c != 0 {
			return c
		}
	} else if c := strings.Compare(a.IP, b.IP); c != 0 {
		return c
	}
	var ua, ub string
	if a.TargetRef != nil {
		ua = string(a.TargetRef.UID)
	}
	if b.TargetRef != nil {
		ub = string(b.TargetRef.UID)
	}
	return strings.Compare(ua, ub)
}

func countAddresses(subsets []corev1.EndpointSubset) (ready, notReady int) {
	for _, ss := range subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	return ready, notReady
}

// truncate cuts subsets down to max addresses, keeping ready addresses
// first and sharing the cut among subsets in proportion to their size. It
// reports whether anything was cut.
func truncate(subsets []corev1.EndpointSubset, max int) bool {
	ready, notReady := countAddresses(subsets)
	if ready+notReady <= max {
		return false
	}
	cutReady := ready > max
	budget, total := max-ready, notReady
	if cutReady {
		budget, total = max, ready
	}
	left := budget
	for i := range subsets {
		ss := &subsets[i]
		list := &ss.NotReadyAddresses
		if cutReady {
			list = &ss.Addresses
			ss.NotReadyAddresses = nil
		}
		share := int(math.Ceil(float64(len(*list)) / float64(total) * float64(budget)))
		share = min(share, left, len(*list))
		*list = (*list)[:share]
		left -= share
	}
	return true
}
