package podkit

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// DNSManagedBy is the endpointslice.kubernetes.io/managed-by value of the
// node DNS slices (the EndpointSlice controller leaves them alone: the
// Service has no selector).
const DNSManagedBy = "node-dns.podkit.io"

// dnsPublishInterval is how often a node re-checks its DNS Service and
// slice after publishing them (repairing a deletion or an edit).
const dnsPublishInterval = 30 * time.Second

// DNSService is the `kube-dns` Service in kube-system: ClusterIP ip, port
// 53 over UDP ("dns") and TCP ("dns-tcp"), no selector (the nodes publish
// their servers as EndpointSlices), internalTrafficPolicy Local (each
// node's pods use their own node's server).
func DNSService(ip netip.Addr) *corev1.Service {
	local := corev1.ServiceInternalTrafficPolicyLocal
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DNSServiceName, Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "podkit-dns",
		}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip.String(), ClusterIPs: []string{ip.String()},
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)},
			},
			InternalTrafficPolicy: &local,
		},
	}
}

// EnsureDNSService creates the `kube-dns` Service with ClusterIP ip unless
// a Service of that name exists (which is then left as it is).
func EnsureDNSService(ctx context.Context, c kubernetes.Interface, ip netip.Addr) error {
	_, err := c.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, DNSService(ip), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service %s/%s with clusterIP %s: %w", metav1.NamespaceSystem, DNSServiceName, ip, err)
	}
	return nil
}

// dnsSlice is the node's EndpointSlice of the `kube-dns` Service: its
// server's address and port, on this node, owned by the Node object.
func (s *nodeServices) dnsSlice(owner *corev1.Node) *discoveryv1.EndpointSlice {
	port := int32(s.dns.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port())
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	node := s.n.cfg.Name
	yes := true
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: DNSServiceName + "-" + node, Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: DNSServiceName, discoveryv1.LabelManagedBy: DNSManagedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{s.gateway.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &yes, Serving: &yes},
			NodeName:   &node,
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptrTo("dns"), Protocol: &udp, Port: &port},
			{Name: ptrTo("dns-tcp"), Protocol: &tcp, Port: &port},
		},
	}
	if owner != nil && owner.UID != "" {
		es.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: owner.Name, UID: owner.UID}}
	}
	return es
}

// publishDNS keeps the `kube-dns` Service and this node's slice in place
// until ctx ends, retrying failures every second.
func (s *nodeServices) publishDNS(ctx context.Context) error {
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if err := s.publishOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("publishing the node DNS server; retrying", "err", err)
			wait = time.Second
			continue
		}
		wait = dnsPublishInterval
	}
}

func (s *nodeServices) publishOnce(ctx context.Context) error {
	c := s.cfg.Client
	if err := EnsureDNSService(ctx, c, s.n.cfg.ClusterDNS[0]); err != nil {
		return err
	}
	owner, err := c.CoreV1().Nodes().Get(ctx, s.n.cfg.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading node %s: %w", s.n.cfg.Name, err)
	}
	want := s.dnsSlice(owner)
	slices := c.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	cur, err := slices.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
	case err != nil:
	case equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(cur.Ports, want.Ports) &&
		equality.Semantic.DeepEqual(cur.Labels, want.Labels) && equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences):
		return nil
	default:
		cur.Labels, cur.OwnerReferences, cur.Endpoints, cur.Ports, cur.AddressType =
			want.Labels, want.OwnerReferences, want.Endpoints, want.Ports, want.AddressType
		_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", metav1.NamespaceSystem, want.Name, err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
