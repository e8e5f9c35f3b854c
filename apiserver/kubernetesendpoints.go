package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// The endpoints of the `kubernetes` service name the live API servers
// (sorted: ready for DeepEqual comparisons). API servers listening on
// different ports cannot share an Endpoints subset or an EndpointSlice
// (ports apply to every address of one), so there is one subset per port
// and one slice per address family and port: the first, in the order
// IPv4 before IPv6 then by port, is named `kubernetes` as in Kubernetes,
// the others kubernetes-<family>-<port>.

// endpointGroup is the API servers sharing a family and a port.
type endpointGroup struct {
	addressType discoveryv1.AddressType
	port        int32
	addrs       []string
}

// groupEndpoints groups sorted endpoints by family and port.
func groupEndpoints(live []apiEndpoint) []endpointGroup {
	var groups []endpointGroup
	for _, e := range live {
		at := discoveryv1.AddressTypeIPv4
		if e.addr.Is6() {
			at = discoveryv1.AddressTypeIPv6
		}
		if n := len(groups); n > 0 && groups[n-1].addressType == at && groups[n-1].port == e.port {
			groups[n-1].addrs = append(groups[n-1].addrs, e.addr.String())
			continue
		}
		groups = append(groups, endpointGroup{addressType: at, port: e.port, addrs: []string{e.addr.String()}})
	}
	return groups
}

func (g endpointGroup) sliceName(first bool) string {
	if first {
		return KubernetesServiceName
	}
	return fmt.Sprintf("%s-%s-%d", KubernetesServiceName, strings.ToLower(string(g.addressType)), g.port)
}

// kubernetesSubsets is the Endpoints' subsets: one per port.
func kubernetesSubsets(live []apiEndpoint) []corev1.EndpointSubset {
	var ports []int32
	for _, e := range live {
		if !slices.Contains(ports, e.port) {
			ports = append(ports, e.port)
		}
	}
	slices.Sort(ports)
	var subsets []corev1.EndpointSubset
	for _, p := range ports {
		var addrs []corev1.EndpointAddress
		for _, e := range live {
			if e.port == p {
				addrs = append(addrs, corev1.EndpointAddress{IP: e.addr.String()})
			}
		}
		slices.SortFunc(addrs, func(a, b corev1.EndpointAddress) int { return strings.Compare(a.IP, b.IP) })
		subsets = append(subsets, corev1.EndpointSubset{Addresses: addrs,
			Ports: []corev1.EndpointPort{{Name: "https", Port: p, Protocol: corev1.ProtocolTCP}}})
	}
	return subsets
}

func (s *Server) ensureKubernetesEndpoints(ctx context.Context, live []apiEndpoint) error {
	res, ok := s.lookup(gvCore, "endpoints")
	if !ok {
		return nil
	}
	want := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: KubernetesServiceName,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: kubernetesSubsets(live),
	}
	return s.ensureObject(ctx, res, want, func(cur runtime.Object) bool {
		ep := cur.(*corev1.Endpoints)
		if equality.Semantic.DeepEqual(ep.Subsets, want.Subsets) && equality.Semantic.DeepEqual(ep.Labels, want.Labels) {
			return false
		}
		ep.Subsets, ep.Labels = want.Subsets, want.Labels
		return true
	})
}

func (s *Server) ensureKubernetesEndpointSlices(ctx context.Context, live []apiEndpoint) error {
	res, ok := s.lookup(gvDiscovery, "endpointslices")
	if !ok {
		return nil
	}
	var wants []*discoveryv1.EndpointSlice
	for i, g := range groupEndpoints(live) {
		name, proto, port := "https", corev1.ProtocolTCP, g.port
		want := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: g.sliceName(i == 0),
				Labels: map[string]string{discoveryv1.LabelServiceName: KubernetesServiceName}},
			AddressType: g.addressType,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		}
		for _, a := range g.addrs {
			ready := true
			want.Endpoints = append(want.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		wants = append(wants, want)
	}
	// Other slices labelled for the service (servers gone, a family left
	// behind: the address type of a slice cannot change) go.
	list, err := s.store.List(ctx, key(res, metav1.NamespaceDefault, ""), storage.ListOptions{Predicate: func(obj runtime.Object) bool {
		es, ok := obj.(*discoveryv1.EndpointSlice)
		return ok && es.Labels[discoveryv1.LabelServiceName] == KubernetesServiceName &&
			!slices.ContainsFunc(wants, func(w *discoveryv1.EndpointSlice) bool {
				return w.Name == es.Name && w.AddressType == es.AddressType
			})
	}})
	if err != nil {
		return err
	}
	for _, obj := range list.Items {
		es := obj.(*discoveryv1.EndpointSlice)
		if _, err := s.store.Delete(ctx, key(res, es.Namespace, es.Name), nil); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	for _, want := range wants {
		err := s.ensureObject(ctx, res, want, func(cur runtime.Object) bool {
			es := cur.(*discoveryv1.EndpointSlice)
			if equality.Semantic.DeepEqual(es.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(es.Ports, want.Ports) &&
				equality.Semantic.DeepEqual(es.Labels, want.Labels) {
				return false
			}
			es.Endpoints, es.Ports, es.Labels = want.Endpoints, want.Ports, want.Labels
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}
