package endpointslice

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/podkit/podkit/controller"
)

// group is the desired endpoints of one address type and one resolved port
// set: they share slices. Pods lacking a named target port resolve to a
// smaller port set and so land in other slices, as in Kubernetes.
type group struct {
	key         string
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   []discoveryv1.Endpoint // sorted by endpointKey
	index       map[string]int         // endpointKey → position
}

// desiredGroups computes every endpoint svc should publish, grouped.
// zoneOf returns a node's topology zone ("" when unknown).
func desiredGroups(svc *corev1.Service, pods []*corev1.Pod, zoneOf func(node string) string) map[string]*group {
	types := addressTypes(svc)
	groups := map[string]*group{}
	for _, pod := range pods {
		if !includePod(pod, true) {
			continue
		}
		ports := endpointPorts(svc, pod)
		pk := portsKey(ports)
		for _, at := range types {
			ep := podEndpoint(pod, svc, at, zoneOf)
			if len(ep.Addresses) == 0 {
				continue
			}
			k := string(at) + "|" + pk
			g := groups[k]
			if g == nil {
				g = &group{key: k, addressType: at, ports: ports, index: map[string]int{}}
				groups[k] = g
			}
			g.endpoints = append(g.endpoints, ep)
		}
	}
	for _, g := range groups {
		slices.SortFunc(g.endpoints, func(a, b discoveryv1.Endpoint) int {
			return strings.Compare(endpointKey(&a), endpointKey(&b))
		})
		for i := range g.endpoints {
			g.index[endpointKey(&g.endpoints[i])] = i
		}
	}
	return groups
}

// podEndpoint is pod's endpoint in slices of address type at. Ready is
// false while the pod terminates unless the Service publishes not-ready
// addresses; serving follows the pod's Ready condition alone.
func podEndpoint(pod *corev1.Pod, svc *corev1.Service, at discoveryv1.AddressType, zoneOf func(string) string) discoveryv1.Endpoint {
	serving := controller.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	for _, ip := range podIPs(pod) {
		if familyMatches(ip, at) {
			ep.Addresses = append(ep.Addresses, ip.String())
		}
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		ep.NodeName = &node
		if zone := zoneOf(node); zone != "" {
			ep.Zone = &zone
		}
	}
	if setHostname(pod, svc) {
		host := pod.Spec.Hostname
		ep.Hostname = &host
	}
	return ep
}

// endpointPorts resolves svc's ports on pod, skipping those the pod does
// not have; a headless Service may have no ports at all.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := findPort(pod, sp)
		if err != nil {
			continue
		}
		name, proto := sp.Name, protocol(sp.Protocol)
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &n, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	slices.SortFunc(out, func(a, b discoveryv1.EndpointPort) int { return strings.Compare(portString(a), portString(b)) })
	return out
}

func portString(p discoveryv1.EndpointPort) string {
	s := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	var n int32
	if p.Port != nil {
		n = *p.Port
	}
	proto := "-"
	if p.Protocol != nil {
		proto = string(*p.Protocol)
	}
	return fmt.Sprintf("%s/%s/%d/%s", s(p.Name), proto, n, s(p.AppProtocol))
}

// portsKey identifies a port set independent of its order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	keys := make([]string, len(ports))
	for i, p := range ports {
		keys[i] = portString(p)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// sliceKey is the group key an existing slice belongs to.
func sliceKey(es *discoveryv1.EndpointSlice) string {
	return string(es.AddressType) + "|" + portsKey(es.Ports)
}

// endpointKey identifies an endpoint: its addresses and its pod.
func endpointKey(ep *discoveryv1.Endpoint) string {
	ref := ""
	if ep.TargetRef != nil {
		ref = ep.TargetRef.Namespace + "/" + ep.TargetRef.Name + "/" + string(ep.TargetRef.UID)
	}
	return strings.Join(ep.Addresses, ",") + "@" + ref
}

// endpointEqual compares endpoints ignoring the pod reference's
// resourceVersion (a pod update alone must not rewrite slices).
func endpointEqual(a, b *discoveryv1.Endpoint) bool {
	if a.TargetRef != nil && b.TargetRef != nil && a.TargetRef.ResourceVersion != b.TargetRef.ResourceVersion {
		ac, bc := *a, *b
		ar, br := *a.TargetRef, *b.TargetRef
		ar.ResourceVersion, br.ResourceVersion = "", ""
		ac.TargetRef, bc.TargetRef = &ar, &br
		return equality.Semantic.DeepEqual(ac, bc)
	}
	return equality.Semantic.DeepEqual(*a, *b)
}

// sortedNames orders slices by name so plans are deterministic.
func sortedNames(list []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	out := slices.Clone(list)
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
