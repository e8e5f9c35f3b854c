package printers

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// loadBalancerWidth is how many characters of load-balancer ingress points
// fit in EXTERNAL-IP before Kubernetes clips them with "...".
const loadBalancerWidth = 16

// maxListed is how many endpoints or ports a cell lists before "+ N more...".
const maxListed = 3

// serviceCells computes NAME, TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE,
// SELECTOR of a service. Rows are always wide, so load-balancer addresses
// are never clipped (as in the Kubernetes API server).
func serviceCells(c *cellContext, svc *corev1.Service) []any {
	clusterIP := none
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return []any{
		svc.Name,
		string(svc.Spec.Type),
		clusterIP,
		serviceExternalIP(svc, true),
		orPlaceholder(servicePorts(svc.Spec.Ports), none),
		c.since(svc.CreationTimestamp),
		labels.FormatLabels(svc.Spec.Selector),
	}
}

// serviceExternalIP is the EXTERNAL-IP cell: external IPs for ClusterIP and
// NodePort services, load-balancer ingress points (then external IPs) or
// "<pending>" for LoadBalancer ones, the external name for ExternalName.
func serviceExternalIP(svc *corev1.Service, wide bool) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return none
	case corev1.ServiceTypeLoadBalancer:
		lb := loadBalancerIngress(svc.Status.LoadBalancer, wide)
		if len(svc.Spec.ExternalIPs) > 0 {
			var all []string
			if lb != "" {
				all = strings.Split(lb, ",")
			}
			return strings.Join(append(all, svc.Spec.ExternalIPs...), ",")
		}
		if lb != "" {
			return lb
		}
		return pending
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return unknown
}

// loadBalancerIngress joins the sorted, distinct ingress IPs (or host names)
// of a load balancer; unless wide it clips the result to loadBalancerWidth.
func loadBalancerIngress(s corev1.LoadBalancerStatus, wide bool) string {
	var points []string
	for _, in := range s.Ingress {
		switch {
		case in.IP != "":
			points = append(points, in.IP)
		case in.Hostname != "":
			points = append(points, in.Hostname)
		}
	}
	slices.Sort(points)
	r := strings.Join(slices.Compact(points), ",")
	if !wide && len(r) > loadBalancerWidth {
		r = r[:loadBalancerWidth-3] + "..."
	}
	return r
}

// servicePorts formats ports as "80/TCP" or, with a node port, "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}

// endpointsCells computes NAME, ENDPOINTS, AGE of an Endpoints object.
func endpointsCells(c *cellContext, ep *corev1.Endpoints) []any {
	return []any{ep.Name, formatEndpoints(ep), c.since(ep.CreationTimestamp)}
}

// formatEndpoints lists up to three "ip:port" endpoints (plain IPs for
// subsets without ports) and how many more there are; "<none>" when the
// object has no subsets.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return none
	}
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 { // headless services may have no ports
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < maxListed {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, port := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < maxListed {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
				}
			}
		}
	}
	ret := strings.Join(list, ",")
	if count > maxListed {
		return fmt.Sprintf("%s + %d more...", ret, count-maxListed)
	}
	return ret
}

// endpointSliceCells computes NAME, ADDRESSTYPE, PORTS, ENDPOINTS, AGE.
func endpointSliceCells(c *cellContext, es *discoveryv1.EndpointSlice) []any {
	var ports []string
	for _, p := range es.Ports {
		if len(ports) == maxListed {
			break
		}
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	var addrs []string
	count := 0
	for _, e := range es.Endpoints {
		for _, a := range e.Addresses {
			if len(addrs) < maxListed {
				addrs = append(addrs, a)
			}
			count++
		}
	}
	return []any{
		es.Name,
		string(es.AddressType),
		listWithMore(ports, len(es.Ports), maxListed),
		listWithMore(addrs, count, maxListed),
		c.since(es.CreationTimestamp),
	}
}
